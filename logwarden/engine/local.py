"""`LocalEngine`: the `Engine` interface on a transformers model in this process.

Owns: turning `Request`s into token ids with the model's chat template, grouping them into
batches (`max_batch`, a token budget), the prefix KV reuse, each row's grammar (a `Request.schema`
overrides the call's; rows of one batch may follow different grammars), halving a batch on CUDA
OOM, the stats of each call, and the streaming wrapper. The loop itself lives in `generate.py`; loading
in `load.py`. Does not know: logs, files, SQLite, Streamlit — only prompts and a JSON schema.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from logwarden.engine.api import MAX_BATCH, Engine, Generation, GenStats, Request, Sampling, TextStream
from logwarden.engine.constrained import BatchConstraint, GrammarCache
from logwarden.engine.cuda_graphs import GraphDecoder
from logwarden.engine.detok import Detokenizer
from logwarden.engine.generate import BatchPlan, Step, run_batch
from logwarden.engine.prefix_cache import PrefixCache, PrefixKV, SplitPrompt, prefill_prefix, split_prompt
from logwarden.engine.sizing import cuda_batch
from logwarden.errors import ConfigError, ModelError

STATIC_BUCKET = 256


@dataclass(slots=True)
class EngineInfo:
    """What `describe()` reports beyond the live model: set by `load.py`."""

    model_name: str = "custom"
    path: str | None = None
    sha256: str | None = None
    quant: str = "fp32"
    attention: str = "sdpa"
    adapter: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _Job:
    index: int  # position in the caller's request list
    split: SplitPrompt
    schema: dict | None = None  # this row's grammar (the request's own, else the call's)


@dataclass(slots=True)
class _Tally:
    """Per-row accumulation while a batch runs."""

    tokens: dict[int, list[int]]
    finished: dict[int, bool]
    first_s: float | None = None


class LocalEngine(Engine):
    def __init__(self, model: Any, tokenizer: Any, *, info: EngineInfo | None = None, max_batch: int = MAX_BATCH,
                 token_budget: int = 32_768, prefix_reuse: bool = True, cache_kind: str = "dynamic",
                 decoder: str = "eager", min_new_tokens: int = 0):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.info = info or EngineInfo()
        self.model_name = self.info.model_name
        self.device = "cuda" if self.model.device.type == "cuda" else "cpu"
        self.adapter_name = self.info.adapter
        self.max_batch = max_batch
        self.token_budget = token_budget
        self.prefix_reuse = prefix_reuse
        self.cache_kind = cache_kind
        self.min_new_tokens = min_new_tokens  # benchmarks only: force output lengths (generate.hold_stops)
        self.prefix_cache = PrefixCache()
        self.stop_ids = frozenset(_stop_ids(model, tokenizer))
        self.pad_id = _pad_id(tokenizer, self.stop_ids)
        self.vocab_size = int(model.config.get_text_config().vocab_size)
        self._grammars: GrammarCache | None = None
        _check_decoder(decoder, cache_kind, getattr(model.config, "_attn_implementation", None))
        self.decoder = decoder
        self._graphs = GraphDecoder(model) if decoder == "graphs" else None
        self._decoder = self._graphs or (_compiled_forward(model) if decoder == "compile" else None)

    # ---- Engine interface -------------------------------------------------------------------

    def generate(self, requests: Sequence[Request], *, max_new_tokens: int, schema: dict | None = None,
                 sampling: Sampling = Sampling()) -> list[Generation]:
        jobs = [_Job(i, self._split(r), r.schema or schema) for i, r in enumerate(requests)]
        results: dict[int, Generation] = {}
        for chunk in self._plan(jobs, max_new_tokens):
            results.update(self._run_with_backoff(chunk, max_new_tokens, sampling))
        return [results[i] for i in range(len(requests))]

    def stream(self, request: Request, *, max_new_tokens: int, schema: dict | None = None,
               sampling: Sampling = Sampling()) -> TextStream:
        job = _Job(0, self._split(request), request.schema or schema)
        return TextStream(self._stream_pieces(job, max_new_tokens, sampling))

    def fit_batch(self, prompt_tokens: int, new_tokens: int) -> int:
        """On CUDA, as many requests per call as free memory holds (docs/GPU.md: 7B nf4 at batch 128
        gives ~11x the records/s of batch 32); on CPU the batch it was built with."""
        if self.device == "cuda":
            self.max_batch = cuda_batch(self.model, prompt_tokens=prompt_tokens, new_tokens=new_tokens)
        return self.max_batch

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def describe(self) -> dict[str, Any]:
        param = next(self.model.parameters())
        return {
            "model": self.info.model_name, "path": self.info.path, "sha256": self.info.sha256,
            "quant": self.info.quant, "dtype": str(param.dtype).removeprefix("torch."),
            "device": str(self.model.device), "attention": self.info.attention,
            "threads": torch.get_num_threads(), "footprint_mb": round(_footprint_mb(self.model), 1),
            "adapter": self.info.adapter, "max_batch": self.max_batch, "prefix_reuse": self.prefix_reuse,
            "cache": self.cache_kind, "decoder": self.decoder,
            "grammars": self._grammars.stats.as_dict() if self._grammars else None, **self.info.extra,
        }

    # ---- planning ---------------------------------------------------------------------------

    def _split(self, request: Request) -> SplitPrompt:
        return split_prompt(self.tokenizer, request.system, request.user)

    def _plan(self, jobs: list[_Job], max_new_tokens: int) -> Iterator[list[_Job]]:
        """Same prefix together, similar lengths together (less padding), within both limits;
        constrained and free rows never share a batch (a batch's rows all have a grammar or none)."""
        ordered = sorted(jobs, key=lambda j: (j.split.prefix, j.schema is None, len(j.split.suffix)))
        chunk: list[_Job] = []
        for job in ordered:
            if chunk and not self._fits(chunk, job, max_new_tokens):
                yield chunk
                chunk = []
            chunk.append(job)
        if chunk:
            yield chunk

    def _fits(self, chunk: list[_Job], job: _Job, max_new_tokens: int) -> bool:
        if len(chunk) >= self.max_batch or job.split.prefix != chunk[0].split.prefix or \
                (job.schema is None) != (chunk[0].schema is None):
            return False
        width = max(len(j.split.prefix) + len(j.split.suffix) for j in [*chunk, job]) + max_new_tokens
        return width * (len(chunk) + 1) <= self.token_budget

    # ---- running ----------------------------------------------------------------------------

    def _run_with_backoff(self, chunk: list[_Job], max_new_tokens: int, sampling: Sampling) -> dict[int, Generation]:
        """CUDA OOM → free what we can, halve the batch, retry both halves; nothing is dropped."""
        try:
            return self._run_chunk(chunk, max_new_tokens, sampling)
        except torch.cuda.OutOfMemoryError as exc:
            if self._graphs is not None:  # pooled caches hold memory a smaller batch may need
                self._graphs.clear()
            _release_cuda_memory()
            if len(chunk) == 1:
                return {chunk[0].index: _oom_generation(exc, self._stats(chunk[0], 0, 1, 0.0, 0.0))}
            half = len(chunk) // 2
            self.max_batch = min(self.max_batch, len(chunk) - half)  # later calls start from what may fit
            first = self._run_with_backoff(chunk[:half], max_new_tokens, sampling)
            return first | self._run_with_backoff(chunk[half:], max_new_tokens, sampling)

    def _run_chunk(self, chunk: list[_Job], max_new_tokens: int, sampling: Sampling) -> dict[int, Generation]:
        start = time.perf_counter()
        tally = _Tally(tokens={i: [] for i in range(len(chunk))}, finished={})
        for step in self._steps(chunk, max_new_tokens, sampling):
            self._record(tally, step, start)
        total = time.perf_counter() - start
        return {job.index: self._generation(job, row, tally, len(chunk), total) for row, job in enumerate(chunk)}

    def _stream_pieces(self, job: _Job, max_new_tokens: int, sampling: Sampling) -> Generator[str, None, Generation]:
        start = time.perf_counter()
        tally = _Tally(tokens={0: []}, finished={})
        detok = Detokenizer(self.tokenizer)
        for step in self._steps([job], max_new_tokens, sampling):
            self._record(tally, step, start)
            if piece := detok.push(step.tokens[0]):
                yield piece
        if piece := detok.flush():
            yield piece
        return self._generation(job, 0, tally, 1, time.perf_counter() - start)

    def _steps(self, chunk: list[_Job], max_new_tokens: int, sampling: Sampling) -> Iterator[Step]:
        """The one loop both `generate` and `stream` consume."""
        plan = self._batch_plan(chunk, max_new_tokens)
        constraint = self._constraint([job.schema for job in chunk])
        cache = self._new_cache(len(chunk), plan)
        _reset_peak_memory(self.model.device)
        yield from run_batch(self.model, plan, cache, sampling=sampling, constraint=constraint,
                             seed=sampling.seed, decoder=self._decoder)

    def _batch_plan(self, chunk: list[_Job], max_new_tokens: int) -> BatchPlan:
        prefix = chunk[0].split.prefix
        kv = self._prefix_kv(prefix) if self.prefix_reuse and prefix else None
        suffixes = [j.split.suffix if kv else [*j.split.prefix, *j.split.suffix] for j in chunk]
        return BatchPlan(prefix=kv, suffixes=suffixes, max_new_tokens=max_new_tokens,
                         stop_ids=self.stop_ids, pad_id=self.pad_id, vocab_size=self.vocab_size,
                         prefix_ids=prefix if kv else (), min_new_tokens=self.min_new_tokens)

    def _prefix_kv(self, prefix: tuple[int, ...]) -> PrefixKV:
        key = PrefixCache.key(self._model_identity(), self.adapter_name, prefix)
        kv = self.prefix_cache.get(key)
        if kv is None:
            kv = prefill_prefix(self.model, prefix, self.model.device)
            self.prefix_cache.put(key, kv)
        return kv

    def _model_identity(self) -> str:
        return f"{self.info.model_name}:{self.info.sha256 or id(self.model)}:{self.info.quant}"

    def _constraint(self, schemas: list[dict | None]) -> BatchConstraint | None:
        """One matcher per row, each with its row's compiled grammar (`_plan` never mixes free rows in)."""
        return None if schemas[0] is None else self._grammar_cache().constraint(schemas)

    def _grammar_cache(self) -> GrammarCache:
        if self._grammars is None:
            self._grammars = GrammarCache(self.tokenizer, self.vocab_size, sorted(self.stop_ids))
        return self._grammars

    def _new_cache(self, batch_size: int, plan: BatchPlan) -> Any:
        from transformers import DynamicCache, StaticCache

        if self.cache_kind == "static":
            longest = max(len(s) for s in plan.suffixes) + (plan.prefix.length if plan.prefix else 0)
            # rounded up so a compiled or captured decode step sees few distinct shapes
            size = -(-(longest + plan.max_new_tokens) // STATIC_BUCKET) * STATIC_BUCKET
            if self._graphs is not None:
                return self._graphs.cache(batch_size, size)
            return StaticCache(config=self.model.config, max_cache_len=size)
        return DynamicCache()

    # ---- results ----------------------------------------------------------------------------

    @staticmethod
    def _record(tally: _Tally, step: Step, start: float) -> None:
        if tally.first_s is None:
            tally.first_s = time.perf_counter() - start
        for row, token, finished in zip(step.rows, step.tokens, step.finished):
            tally.tokens[row].append(token)
            tally.finished[row] = finished

    def _generation(self, job: _Job, row: int, tally: _Tally, batch_size: int, total: float) -> Generation:
        tokens = tally.tokens[row]
        text = self.tokenizer.decode(tokens, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        stats = self._stats(job, len(tokens), batch_size, tally.first_s or total, total)
        return Generation(text=text, stats=stats, finished=tally.finished.get(row, False))

    def _stats(self, job: _Job, new_tokens: int, batch_size: int, ttft: float, total: float) -> GenStats:
        reused = len(job.split.prefix) if self.prefix_reuse else 0
        decode_s = max(total - ttft, 1e-9)
        return GenStats(
            prompt_tokens=len(job.split.prefix) + len(job.split.suffix), cached_prefix_tokens=reused,
            new_tokens=new_tokens, ttft_s=ttft, total_s=total,
            tokens_per_s=(new_tokens - 1) / decode_s if new_tokens > 1 else 0.0,
            peak_memory_mb=_peak_memory_mb(self.model.device), batch_size=batch_size,
            attention=self.info.attention, quant=self.info.quant, device=str(self.model.device),
            model=self.info.model_name)


DECODERS = ("eager", "compile", "graphs")


def _check_decoder(decoder: str, cache_kind: str, attention: str | None) -> None:
    """Compiled and captured steps need fixed shapes and addresses: a static cache. Captured steps
    hand the model a 4-D mask, which flash_attention_2 does not take."""
    if decoder not in DECODERS:
        raise ConfigError(f"Unknown decoder {decoder!r}; use one of {', '.join(DECODERS)}.")
    if decoder != "eager" and cache_kind != "static":
        raise ConfigError(f"The {decoder!r} decoder needs the static cache (cache_kind='static').")
    if decoder == "graphs" and attention == "flash_attention_2":
        raise ConfigError("The 'graphs' decoder needs sdpa or eager attention, not flash_attention_2.")


def _compiled_forward(model: Any) -> Any:
    """reduce-overhead = CUDA graphs on GPU; on CPU inductor compiles C++ (measured: docs/ENGINE.md)."""
    mode = "reduce-overhead" if model.device.type == "cuda" else "default"
    return torch.compile(model.forward, mode=mode, fullgraph=False)


def _stop_ids(model: Any, tokenizer: Any) -> set[int]:
    ids: set[int] = set()
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids.update(configured if isinstance(configured, list) else [configured] if configured is not None else [])
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if isinstance(im_end, int) and im_end != tokenizer.unk_token_id:
        ids.add(im_end)  # chat models end a turn with it even when the config names another eos
    if not ids:
        raise ModelError("The model/tokenizer declares no end-of-sequence token; set eos_token_id in "
                         "the model's generation_config.json.")
    return ids


def _pad_id(tokenizer: Any, stop_ids: frozenset[int]) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(stop_ids)


def _footprint_mb(model: Any) -> float:
    return model.get_memory_footprint() / 2**20


def _reset_peak_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def _peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB, process high-water


def _release_cuda_memory() -> None:
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _oom_generation(exc: BaseException, stats: GenStats) -> Generation:
    return Generation(text="", stats=stats, finished=False,
                      error=f"CUDA out of memory even for one request ({exc}); lower max_new_tokens, "
                            f"use --quant nf4, or a smaller --model.")
