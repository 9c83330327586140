"""Decode steps replayed from CUDA graphs, on pooled static KV caches.

Owns: `GraphDecoder`, which hands the engine a static cache per (batch, length) — reset and reused
across batches, so a graph captured on it stays valid — and runs each decode step by replaying a
graph captured on that cache.

Why: on the H200 a 7B nf4 decode step is about 5 ms of GPU kernels but 9.4 ms of wall time when
its ~1,000 kernels are launched from Python (docs/GPU.md). A replayed graph launches the whole
step at once. torch.compile's "reduce-overhead" mode was meant to do this, but it re-records for
every new cache and gave no measurable gain there.

How: the first decode step on a cache runs eagerly (its answer is used) and then the same step is
captured; later steps copy their inputs into the captured tensors and replay. transformers'
StaticCache keeps its write position in a GPU tensor, so a replay advances the cache by itself.
The mask is handed to the model already 4-D: transformers then uses it as is, instead of
inspecting a 2-D mask on the host (a sync, which capture forbids).
Without CUDA (`capture=False`) the same steps run eagerly, so the CPU tests cover the mask and
the pooling. Does not know: sampling, grammars, batching.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import torch

from logwarden.engine.prefix_cache import cache_keyword

POOL_SIZE = 3  # caches kept: a run's full batch, its last partial batch and triage's batch of one


@dataclass(slots=True)
class _Captured:
    graph: torch.cuda.CUDAGraph
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    logits: torch.Tensor


class GraphDecoder:
    """Called like the model's forward for one decode step; returns an object with `.logits`."""

    def __init__(self, model: Any, *, capture: bool | None = None, pool_size: int = POOL_SIZE):
        self.model = model
        self.capture = model.device.type == "cuda" if capture is None else capture
        self.pool_size = pool_size
        self.cache_kw = cache_keyword(model)
        self._attention = getattr(model.config, "_attn_implementation", "sdpa")
        self._caches: OrderedDict[tuple[int, int], Any] = OrderedDict()
        self._steps: dict[int, _Captured] = {}  # id(cache) → the step captured on it

    def cache(self, batch_size: int, length: int) -> Any:
        """A static cache for `batch_size` rows of `length` positions, empty; pooled."""
        from transformers import StaticCache

        key = (batch_size, length)
        if key in self._caches:
            self._caches.move_to_end(key)
            cache = self._caches[key]
            with torch.inference_mode():  # its tensors were made inside the generation loop's inference mode
                cache.reset()
            return cache
        cache = self._caches[key] = StaticCache(config=self.model.config, max_cache_len=length)
        while len(self._caches) > self.pool_size:
            _, evicted = self._caches.popitem(last=False)
            self._steps.pop(id(evicted), None)
        return cache

    def clear(self) -> None:
        """Drop every pooled cache and captured step (their memory goes back after a CUDA OOM)."""
        self._caches.clear()
        self._steps.clear()

    def __call__(self, *, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor,
                 **kwargs: Any) -> Any:
        cache = kwargs.pop(self.cache_kw)
        mask = decode_mask(attention_mask, self._attention, self.model.dtype)
        step = self._steps.get(id(cache))
        if step is None:
            out = self.model(input_ids=input_ids, attention_mask=mask, position_ids=position_ids,
                             **{self.cache_kw: cache}, **kwargs)
            if self.capture:
                self._steps[id(cache)] = self._capture(input_ids, mask, position_ids, cache, kwargs)
            return out
        step.input_ids.copy_(input_ids)
        step.attention_mask.copy_(mask)
        step.position_ids.copy_(position_ids)
        step.graph.replay()
        return SimpleNamespace(logits=step.logits)

    def _capture(self, input_ids: torch.Tensor, mask: torch.Tensor, position_ids: torch.Tensor, cache: Any,
                 kwargs: dict) -> _Captured:
        """Record one step on fixed input tensors. Recording runs no kernel: the cache is not touched."""
        ids, mask, positions = input_ids.clone(), mask.clone(), position_ids.clone()
        graph = torch.cuda.CUDAGraph()
        torch.cuda.synchronize(self.model.device)
        with torch.cuda.graph(graph):
            out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions,
                             **{self.cache_kw: cache}, **kwargs)
        return _Captured(graph, ids, mask, positions, out.logits)


def decode_mask(mask: torch.Tensor, attention: str, dtype: torch.dtype) -> torch.Tensor:
    """(B, L) 0/1 → the (B, 1, 1, L) mask transformers would build for one query position:
    additive for eager attention, boolean (True = attend) for SDPA and its variants."""
    allowed = mask[:, None, None, :].bool()
    if attention != "eager":
        return allowed
    return torch.zeros(allowed.shape, dtype=dtype, device=mask.device).masked_fill(~allowed, torch.finfo(dtype).min)
