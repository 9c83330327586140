"""`LlamaCppEngine`: the `Engine` interface on llama.cpp in this process (the `xllamacpp` wheel:
llama.cpp's own server library, called directly — requests never go over HTTP, no child process).

Owns: the llama.cpp context (a GGUF, an optional GGUF LoRA, `slots` parallel sequences with
continuous batching, flash attention, an optional draft model (llama.cpp's speculative decoding), the slots' prompt cache that keeps the shared system
prefix's KV, a small RAM prompt cache), warming every slot with that prefix's KV (`warm_prefix`:
restored from the state file an earlier process saved, or prefilled once and saved —
`llamacpp_prefix.py`), turning `Request`s into chat-completion tasks (grammar from the request's
own schema or the call's, sampling), running a batch as concurrent tasks, streaming one answer
piece by piece, stats from llama.cpp's own timings, and turning llama.cpp's failures into
`ModelError`s (load, grammar) or failed `Generation`s (one bad request).

`xllamacpp.Server` always opens llama-server's HTTP listener as well; it is bound to a unix socket
in a private 0700 temp folder (nothing on the network); only the slot save/restore actions, which
the Python API lacks, go through it.
Does not know: logs, prompts' content (the caller passes the prefix to warm), where the GGUF came
from (`load.py`), peft (`gguf_lora.py`, `gguf_derive.py`).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import resource
import shutil
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The wheel's llama.cpp runs its threads with OpenMP, which reads this when the library loads.
# Spinning waiters (its default) made 2 threads 5-10x slower than 1 on this shared 2-core CPU;
# sleeping ones did not (docs/ENGINE.md). A caller's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
_LIBRARY_LOG = logging.getLogger("xllamacpp")  # llama.cpp's own chatter: the CLI shows it with -vv

import llguidance  # noqa: E402
import xllamacpp  # noqa: E402

from logwarden.engine.api import Engine, Generation, GenStats, Request, Sampling, TextStream  # noqa: E402
from logwarden.engine.embedded import sha256_of  # noqa: E402
from logwarden.engine.gguf_cache import header_facts  # noqa: E402
from logwarden.engine.llamacpp_prefix import PrefixKey, SlotStates, text_sha256  # noqa: E402
from logwarden.errors import ModelError  # noqa: E402

# llguidance (llama.cpp's grammar engine here) lets JSON whitespace vary by default; a small model
# then pads with newlines and indents (tokens spent, and a way to loop). So no free whitespace, and
# the separators json.dumps writes (", " and ": "), as the training targets and xgrammar's grammars
# spell them: forced into ":[" instead of ": [", the adapter saw a token sequence it was never
# trained on and answered "no findings" where, under the GPU's grammar, it found the attack.
COMPACT_JSON = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
_GRAMMAR_ERRORS = ("grammar", "Failed to initialize samplers")


@dataclass(frozen=True, slots=True)
class LlamaCppConfig:
    gguf: Path
    lora: Path | None = None
    threads: int | None = None  # None = llama.cpp's default (the physical cores)
    slots: int = 4  # parallel sequences; each keeps its own copy of the prefix KV
    ctx_per_slot: int = 4096  # prompt + answer tokens one sequence may hold (digests reach ~2k tokens)
    flash_attn: bool = True
    prompt_cache_mib: int = 256  # RAM for saved slot states (a prefix another slot had)
    prefix_state_dir: Path | None = None  # where warm_prefix keeps prefix KV files; None = this process only
    header_cache_dir: Path | None = None  # where the GGUF's header facts are kept (gguf_cache.py); None = none
    draft_gguf: Path | None = None  # a smaller model of the same vocabulary that drafts (speculative decoding)
    draft_tokens: int = 8  # at most this many drafted tokens per verification step
    draft_p_min: float = 0.75  # a drafted token the draft itself is less sure of ends the draft


@dataclass(slots=True)
class _Outcome:
    """What one task returned, filled chunk by chunk."""

    started: float
    pieces: list[str] = field(default_factory=list)
    finish: str | None = None
    timings: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    grammar_error: bool = False
    first_s: float | None = None
    total_s: float = 0.0

    def take(self, chunk: dict, on_piece: Callable[[str], None] | None) -> None:
        if "error" in chunk:
            self.fail(str(chunk["error"].get("message", chunk["error"])))
            return
        choice = (chunk.get("choices") or [{}])[0]
        if piece := (choice.get("delta") or {}).get("content"):
            if self.first_s is None:
                self.first_s = time.perf_counter() - self.started
            self.pieces.append(piece)
            if on_piece is not None:
                on_piece(piece)
        self.finish = choice.get("finish_reason") or self.finish
        self.timings = chunk.get("timings") or self.timings

    def fail(self, message: str) -> None:
        self.error = f"llama.cpp: {message}"
        self.grammar_error = any(marker in message for marker in _GRAMMAR_ERRORS)


class LlamaCppEngine(Engine):
    device = "cpu"

    def __init__(self, config: LlamaCppConfig, *, model_name: str = "custom", sha256: str | None = None,
                 adapter_name: str | None = None, adapter_merged: bool = False):
        """`sha256`: the GGUF's, when the caller has checked it (else hashed when a prefix state
        needs it); `adapter_merged`: the adapter `adapter_name` is in the weights, not a LoRA."""
        self.config = config
        self.model_name = model_name
        self.adapter_name = adapter_name
        self.adapter_merged = adapter_merged
        self.sha256 = sha256
        self.max_batch = config.slots
        self.prefix_state: dict[str, Any] | None = None  # what warm_prefix did
        facts = header_facts(config.gguf, sha256=sha256, cache_dir=config.header_cache_dir)
        self.metadata = facts.metadata  # the header's scalar keys (the vocabulary's arrays are in _tokens)
        self._tokens = facts.tokens
        self._grammars: dict[str, str] = {}
        self._inflight: set[threading.Event] = set()  # one per running generate/stream: cancel() sets them
        self._socket_dir = Path(tempfile.mkdtemp(prefix="logwarden-llama-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._socket_dir, True)
        self._states = SlotStates(config.prefix_state_dir or self._socket_dir, self._socket_dir / "llama.sock")
        self._params = _params(config, self._socket_dir / "llama.sock", self._states.folder)
        self._server = _start(self._params, config)

    # ---- Engine interface -------------------------------------------------------------------

    def generate(self, requests: Sequence[Request], *, max_new_tokens: int, schema: dict | None = None,
                 sampling: Sampling = Sampling()) -> list[Generation]:
        """Every request is a task of its own; llama.cpp batches them over its slots. `cancel()`
        from another thread (or a signal handler) ends the wait at once: unfinished tasks come
        back as failed generations ("cancelled") and are stopped at their next chunk."""
        if not requests:
            return []
        bodies = [self._body(r, schema, max_new_tokens, sampling) for r in requests]
        with self._cancellable() as cancel:
            pool = ThreadPoolExecutor(max_workers=len(bodies), thread_name_prefix="llama-task")
            futures = [pool.submit(self._run, body, None, cancel) for body in bodies]
            pool.shutdown(wait=False)  # a cancelled task may still be prefilling: nobody waits for it
            _wait_unless(cancel, futures)
        outcomes = [f.result() if f.done() else _cancelled() for f in futures]
        _raise_on_grammar_error(outcomes)
        batch = min(len(requests), self.config.slots)
        return [self._generation(o, batch) for o in outcomes]

    def cancel(self) -> None:
        """Stop every generation in flight now (e.g. on SIGTERM): waiting callers return at once
        with failed generations; llama.cpp drops each task at its next chunk and frees its slot.
        Safe to call from a signal handler; later calls to `generate`/`stream` run normally."""
        for event in list(self._inflight):
            event.set()

    @contextmanager
    def _cancellable(self) -> Iterator[threading.Event]:
        cancel = threading.Event()
        self._inflight.add(cancel)
        try:
            yield cancel
        finally:
            self._inflight.discard(cancel)

    def stream(self, request: Request, *, max_new_tokens: int, schema: dict | None = None,
               sampling: Sampling = Sampling()) -> TextStream:
        return TextStream(self._stream_pieces(self._body(request, schema, max_new_tokens, sampling)))

    def count_tokens(self, text: str) -> int:
        return self._tokens.count(text)

    def warm_prefix(self, system: str, user_lead: str = "") -> dict[str, Any]:
        """Give every slot the KV of a chat prompt that starts with the system message `system` and a
        user message starting with `user_lead` (what all the caller's prompts share): restored
        from its state file when one matches, else prefilled once in slot 0, saved for the next
        process, and restored into the other slots. Requests then prefill only what follows."""
        began = time.perf_counter()
        key = self._prefix_key(system, user_lead)
        tokens = self._states.restore(key, range(self.config.slots))
        state = "prefilled" if tokens is None else "restored"
        self._prefill_prefix(system, user_lead)  # after a restore: one token
        if tokens is None:
            tokens = self._states.save(key, 0)
            if tokens and self.config.slots > 1 and self._states.restore(key, range(1, self.config.slots)) is None:
                tokens = None  # slot 0 has the prefix; the others will compute it themselves
        self.prefix_state = {"state": state, "tokens": tokens, "seconds": round(time.perf_counter() - began, 3),
                             "file": str(self._states.folder) if self.config.prefix_state_dir else None}
        return self.prefix_state

    def describe(self) -> dict[str, Any]:
        return {
            "engine": "llamacpp", "model": self.model_name, "path": str(self.config.gguf), "sha256": self.sha256,
            "quant": self.quant, "dtype": self.quant, "device": "cpu",
            "attention": "flash_attn" if self.config.flash_attn else "llama.cpp default",
            "threads": self._params.cpuparams.n_threads, "slots": self.config.slots,
            "ctx_per_slot": self.config.ctx_per_slot, "max_batch": self.max_batch, "prefix_reuse": True,
            "adapter": self.adapter_name, "adapter_gguf": str(self.config.lora) if self.config.lora else None,
            "adapter_merged": self.adapter_merged, "prefix_state": self.prefix_state,
            "draft_model": str(self.config.draft_gguf) if self.config.draft_gguf else None,
            "draft_tokens": self.config.draft_tokens if self.config.draft_gguf else None,
            "tokenizer": self._tokens.kind, "tokenizer_exact": self._tokens.exact,
            "llama_cpp": f"xllamacpp {xllamacpp.__version__}",
        }

    def close(self) -> None:
        """Frees the model and its slots now (otherwise when the engine is garbage-collected)."""
        self._server = None
        self._cleanup()

    @property
    def quant(self) -> str:
        import gguf

        file_type = self.metadata.get("general.file_type")
        try:
            return gguf.LlamaFileType(file_type).name.removeprefix("MOSTLY_").removeprefix("ALL_")
        except ValueError:
            return f"gguf file type {file_type}"

    # ---- the shared prefix -----------------------------------------------------------------

    def _prefix_key(self, system: str, user_lead: str) -> PrefixKey:
        if self.sha256 is None:  # a GGUF nobody checked: its bytes are its identity
            self.sha256 = sha256_of([self.config.gguf])
        return PrefixKey(model_sha256=self.sha256,
                         lora_sha256=sha256_of([self.config.lora]) if self.config.lora else None,
                         prefix_sha256=text_sha256(system, user_lead), slots=self.config.slots,
                         ctx_per_slot=self.config.ctx_per_slot,
                         flash_attn=self.config.flash_attn, llama_cpp=f"xllamacpp {xllamacpp.__version__}")

    def _prefill_prefix(self, system: str, user_lead: str) -> None:
        """The prefix's prompt through slot 0, computing what the slot lacks (all of it, or one token
        after a restore), under a grammar: llama.cpp's grammar engine builds its token tables on
        first use (~0.7 s here), which would otherwise land on the first request's TTFT."""
        body = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user_lead}],
                "max_tokens": 1, "stream": True, "cache_prompt": True, "id_slot": 0,
                "grammar": self._grammar({"type": "object"}), **sampling_fields(Sampling())}
        outcome = self._run(body)
        if outcome.error is not None:
            raise ModelError(f"llama.cpp could not prefill the shared prompt prefix: {outcome.error}")

    # ---- requests ---------------------------------------------------------------------------

    def _body(self, request: Request, schema: dict | None, max_new_tokens: int, sampling: Sampling) -> dict:
        body: dict[str, Any] = {
            "messages": [{"role": "system", "content": request.system}, {"role": "user", "content": request.user}],
            "max_tokens": max_new_tokens, "stream": True, "cache_prompt": True, **sampling_fields(sampling)}
        own = request.schema if request.schema is not None else schema
        if own is not None:
            body["grammar"] = self._grammar(own)
        return body

    def _grammar(self, schema: dict) -> str:
        """llama.cpp's JSON-schema → grammar conversion, compiled once here, cached per schema.
        llama.cpp itself only logs a grammar llguidance cannot compile and then samples without
        it: compiling first (same llguidance) is what keeps the schema guarantee."""
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            try:
                grammar = xllamacpp.json_schema_to_grammar({**schema, "x-guidance": COMPACT_JSON})
            except (ValueError, TypeError) as exc:
                raise ModelError(f"llama.cpp cannot turn the JSON schema into a grammar ({exc}); fix the "
                                 f"schema.") from exc
            if problem := llguidance.LLMatcher.validate_grammar(grammar):
                raise ModelError(f"The JSON schema does not compile to a grammar: {problem.splitlines()[0]}; "
                                 f"fix the schema.")
            self._grammars[key] = grammar
        return self._grammars[key]

    def _run(self, body: dict, on_piece: Callable[[str], None] | None = None,
             cancel: threading.Event | None = None) -> _Outcome:
        """One task to its end (or until `cancel` is set); never raises for a bad request."""
        outcome = _Outcome(started=time.perf_counter())

        def on_chunk(chunk: dict) -> bool:  # True stops the task
            try:
                outcome.take(chunk, on_piece)
            except Exception as exc:  # xllamacpp would swallow it and stop silently
                outcome.fail(f"unreadable answer chunk ({exc})")
                return True
            return cancel is not None and cancel.is_set()

        server = self._server
        if server is None:
            outcome.fail("the engine was closed")
            return outcome
        try:
            server.handle_chat_completions(body, on_chunk)
        except (ValueError, TypeError, RuntimeError, OverflowError) as exc:  # rejected before it ran
            outcome.fail(f"request rejected ({exc})")
        outcome.total_s = time.perf_counter() - outcome.started
        return outcome

    def _stream_pieces(self, body: dict) -> Generator[str, None, Generation]:
        """The task runs in a worker thread; pieces come through a queue. Leaving early (a closed
        generator: the UI's stop, Ctrl-C) or `cancel()` cancels it without waiting for it: a task
        still prefilling sends its next chunk only when the prefill is done."""
        pieces: queue.Queue = queue.Queue()
        with self._cancellable() as cancel:
            worker = threading.Thread(target=lambda: pieces.put(self._run(body, pieces.put, cancel)),
                                      name="llama-stream", daemon=True)
            worker.start()
            try:
                while not isinstance(item := _next_piece(pieces, cancel), _Outcome):
                    yield item
            finally:
                cancel.set()
        _raise_on_grammar_error([item])
        return self._generation(item, 1)

    # ---- results ----------------------------------------------------------------------------

    def _generation(self, outcome: _Outcome, batch_size: int) -> Generation:
        t = outcome.timings
        stats = GenStats(
            prompt_tokens=int(t.get("prompt_n", 0) + t.get("cache_n", 0)), cached_prefix_tokens=int(t.get("cache_n", 0)),
            new_tokens=int(t.get("predicted_n", 0)), ttft_s=outcome.first_s or outcome.total_s,
            total_s=outcome.total_s, tokens_per_s=float(t.get("predicted_per_second", 0.0)),
            peak_memory_mb=_peak_rss_mb(), batch_size=batch_size,
            attention="flash_attn" if self.config.flash_attn else "default", quant=self.quant, device="cpu",
            model=self.model_name, drafted_tokens=int(t.get("draft_n", 0)),
            accepted_tokens=int(t.get("draft_n_accepted", 0)))
        # "stop" = end of turn, which the grammar admits only once the document is complete
        finished = outcome.error is None and outcome.finish == "stop"
        return Generation(text="".join(outcome.pieces), stats=stats, finished=finished,
                          error=outcome.error or self._context_full(stats))

    def _context_full(self, stats: GenStats) -> str | None:
        """An answer cut by the slot's context, not by the token budget, says so."""
        if stats.prompt_tokens + stats.new_tokens < self.config.ctx_per_slot:
            return None
        return (f"prompt ({stats.prompt_tokens} tokens) + answer filled the slot's context of "
                f"{self.config.ctx_per_slot} tokens; shorten the prompt or raise ctx_per_slot")


def sampling_fields(sampling: Sampling) -> dict[str, Any]:
    """The transformers engine's sampling in llama.cpp's words: temperature 0 = greedy; only
    temperature and nucleus (top_k and min_p off); the repetition penalty over the whole context."""
    fields: dict[str, Any] = {"temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": 0,
                              "min_p": 0.0, "repeat_penalty": sampling.repetition_penalty,
                              "repeat_last_n": -1 if sampling.repetition_penalty != 1.0 else 0}
    if sampling.seed is not None:
        fields["seed"] = sampling.seed
    return fields


def _params(config: LlamaCppConfig, socket: Path, states: Path) -> Any:
    if config.slots < 1 or config.ctx_per_slot < 64:
        raise ModelError(f"llama.cpp needs slots ≥ 1 and ctx_per_slot ≥ 64 (got {config.slots}, "
                         f"{config.ctx_per_slot}).")
    p = xllamacpp.CommonParams()
    p.model.path = str(config.gguf)
    if config.lora is not None:
        p.lora_adapters = [xllamacpp.CommonAdapterLoraInfo(str(config.lora), 1.0)]
    p.n_parallel = config.slots
    p.n_ctx = config.slots * config.ctx_per_slot  # llama.cpp splits the context over the slots
    for cpu in (p.cpuparams, p.cpuparams_batch):
        cpu.n_threads = config.threads or -1
        cpu.poll = 0  # idle workers sleep instead of spinning: on a shared CPU spinning steals cores
    p.flash_attn_type = (xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_ENABLED if config.flash_attn
                         else xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_AUTO)
    p.cache_prompt = True  # each slot keeps its last prompt's KV: the system prefix is computed once
    p.cache_ram_mib = config.prompt_cache_mib
    p.reasoning_format = xllamacpp.common_reasoning_format.COMMON_REASONING_FORMAT_NONE
    p.hostnames = [str(socket)]
    p.slot_save_path = f"{states}{os.sep}"  # llama.cpp appends the file name to it as a string
    p.n_threads_http = 1
    if config.draft_gguf is not None:
        _speculate(p, config)
    p.verbosity = 1  # errors and warnings only
    return p


def _speculate(p: Any, config: LlamaCppConfig) -> None:
    """llama.cpp's own speculative decoding: per slot, the draft model proposes up to `draft_tokens`
    greedily (stopping where its own top probability falls under `draft_p_min`), the model checks
    them in one batch and keeps the longest run its own sampler — grammar included — agrees with,
    plus one token of its own. Under greedy sampling the answer is the model's alone."""
    if config.draft_tokens < 1:
        raise ModelError(f"draft_tokens must be ≥ 1 (got {config.draft_tokens}).")
    draft = p.speculative.draft
    draft.mparams.path = str(config.draft_gguf)
    draft.n_max = config.draft_tokens
    draft.n_min = 0
    draft.p_min = config.draft_p_min
    for cpu in (draft.cpuparams, draft.cpuparams_batch):
        cpu.n_threads = config.threads or -1
        cpu.poll = 0
    p.speculative.types = [xllamacpp.common_speculative_type.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]


def _start(params: Any, config: LlamaCppConfig) -> Any:
    """Load the model; a failure becomes a ModelError quoting llama.cpp's own error lines."""
    with _stderr_captured() as captured:
        try:
            return xllamacpp.Server(params)
        except (RuntimeError, ValueError) as exc:
            failure = exc
    reasons = [line.split(" E ", 1)[-1].strip() for line in captured() if " E " in line]
    what = f"{config.gguf}" + (f" with the LoRA {config.lora}" if config.lora else "")
    raise ModelError(f"llama.cpp could not load {what}: {'; '.join(reasons[-3:]) or failure}. Fix: check the "
                     f"file is a complete GGUF model (and the LoRA was made for it), or use --model embedded.")


@contextmanager
def _stderr_captured() -> Iterator[Callable[[], list[str]]]:
    """llama.cpp reports why a load failed only on file descriptor 2: catch it while loading;
    whatever else it wrote is passed on to this module's logger at debug level (third-party
    chatter, shown with the CLI's -vv), so nothing is lost and stderr stays logwarden's own."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        lines: list[str] = []
        try:
            yield lambda: lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
            lines.extend(text.splitlines())
            if text and not any(" E " in line for line in lines):
                _LIBRARY_LOG.debug("while loading:\n%s", text.rstrip())


_POLL_S = 0.2  # how often a waiting caller looks at its cancel event (futures cannot wait on an event)


def _wait_unless(cancel: threading.Event, futures: Sequence[Future]) -> None:
    """Until every future is done, or `cancel` is set."""
    pending = set(futures)
    while pending and not cancel.is_set():
        _, pending = wait(pending, timeout=_POLL_S)


def _next_piece(pieces: queue.Queue, cancel: threading.Event) -> str | _Outcome:
    while True:
        try:
            return pieces.get(timeout=_POLL_S)
        except queue.Empty:
            if cancel.is_set():
                return _cancelled()


def _cancelled() -> _Outcome:
    outcome = _Outcome(started=time.perf_counter())
    outcome.fail("cancelled")
    return outcome


def _raise_on_grammar_error(outcomes: Sequence[_Outcome]) -> None:
    bad = next((o for o in outcomes if o.grammar_error), None)
    if bad is not None:
        raise ModelError(f"The JSON schema's grammar does not compile in llama.cpp ({bad.error}); fix the schema.")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB, the process high-water
