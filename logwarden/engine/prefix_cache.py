"""The shared system prefix and its KV cache.

Every request's chat-template tokens start with the same prefix (template tokens up to where the
user content starts). Its keys/values are computed once per (model, adapter, prefix tokens) and
laid under every batch: a sequence is [prefix][left padding][suffix], the padding masked out and
positions counted over unmasked tokens only, so each sequence sees exactly what it would see alone.
Owns: splitting a rendered prompt into prefix/suffix token ids, and the prefix KV store.
Does not know: sampling, grammars, or how batches are formed (`generate.py`).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from logwarden.errors import ModelError

_SENTINEL = "\u2063LOGWARDEN_USER\u2063"  # invisible separator: never in a real system prompt


@dataclass(frozen=True, slots=True)
class SplitPrompt:
    prefix: tuple[int, ...]  # shared by every request with this system prompt
    suffix: list[int]  # user content + the assistant header


def render(tokenizer: Any, system: str, user: str) -> str:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def split_prompt(tokenizer: Any, system: str, user: str) -> SplitPrompt:
    """Token ids of the full prompt, cut where the prefix's own tokenization stops agreeing.

    Tokenizing the prefix text alone can merge differently at the boundary than inside the full
    prompt; taking the common token prefix keeps the full prompt's tokens exact either way.
    """
    full = _encode(tokenizer, render(tokenizer, system, user))
    prefix_text = render(tokenizer, system, _SENTINEL).split(_SENTINEL)[0]
    prefix = _encode(tokenizer, prefix_text)
    n = _common_length(full, prefix)
    return SplitPrompt(prefix=tuple(full[:n]), suffix=full[n:])


def _encode(tokenizer: Any, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def _common_length(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


@dataclass(slots=True)
class PrefixKV:
    """Per layer (keys, values), each (1, kv_heads, P, head_dim); never mutated after prefill."""

    layers: list[tuple[torch.Tensor, torch.Tensor]]
    length: int


class PrefixCache:
    """LRU of prefix KV states keyed by (model identity, adapter, prefix tokens hash)."""

    def __init__(self, capacity: int = 4):
        self.capacity = capacity
        self._store: OrderedDict[str, PrefixKV] = OrderedDict()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(model_id: str, adapter: str | None, prefix: Sequence[int]) -> str:
        digest = hashlib.sha256(repr(tuple(prefix)).encode()).hexdigest()
        return f"{model_id}|{adapter or '-'}|{digest}"

    def get(self, key: str) -> PrefixKV | None:
        found = self._store.get(key)
        if found is None:
            self.misses += 1
            return None
        self.hits += 1
        self._store.move_to_end(key)
        return found

    def put(self, key: str, kv: PrefixKV) -> None:
        self._store[key] = kv
        self._store.move_to_end(key)
        while len(self._store) > self.capacity:
            self._store.popitem(last=False)

    def clear(self) -> None:
        self._store.clear()


def cache_keyword(model: Any) -> str:
    """The keyword the model's forward takes its KV cache under: transformers renamed
    `past_key_values` to `cache` during 5.x, and an unknown keyword is swallowed by `**kwargs`
    silently (the model then runs without its cache and answers garbage), so ask the signature."""
    return _cache_keyword(type(model.get_base_model() if hasattr(model, "get_base_model") else model))


@functools.lru_cache(maxsize=None)
def _cache_keyword(model_class: type) -> str:
    return "cache" if "cache" in inspect.signature(model_class.forward).parameters else "past_key_values"


def check_cache_filled(cache: Any, expected: int) -> None:
    """Fail loudly if a forward pass did not write its keys/values into `cache`."""
    if cache.get_seq_length() < expected:
        raise ModelError(f"The model did not write into the KV cache ({cache.get_seq_length()} of {expected} "
                         f"positions); its forward() takes the cache under another name. Fix: use a "
                         f"transformers 5.x model class, or report the model type.")


@torch.inference_mode()
def prefill_prefix(model: Any, prefix: Sequence[int], device: torch.device) -> PrefixKV:
    """Run the prefix once through the model, batch 1, and keep its keys/values."""
    from transformers import DynamicCache

    ids = torch.tensor([list(prefix)], device=device)  # (1, P)
    cache = DynamicCache()
    model(input_ids=ids, use_cache=True, logits_to_keep=1, **{cache_keyword(model): cache})
    check_cache_filled(cache, len(prefix))
    layers = [(layer.keys, layer.values) for layer in cache.layers]
    return PrefixKV(layers=layers, length=len(prefix))


def fill_cache(cache: Any, kv: PrefixKV, batch_size: int) -> None:
    """Write the prefix under every row of a fresh (dynamic or static) cache; the shared tensors
    are broadcast with `expand` (no copy) and the cache's `update` copies them into its storage."""
    for layer_idx, (keys, values) in enumerate(kv.layers):
        cache.update(keys.expand(batch_size, -1, -1, -1), values.expand(batch_size, -1, -1, -1), layer_idx)
