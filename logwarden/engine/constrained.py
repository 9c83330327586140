"""Schema-constrained decoding with xgrammar: a JSON schema becomes a grammar, the grammar a token
mask applied to the logits at every step, one `GrammarMatcher` per sequence of a batch.

Owns: compiling (an LRU cache per tokenizer, keyed by schema hash — per-window schemas make many
distinct grammars, ~50 ms each on a 2-core CPU), the batch bitmask (each row may follow its own
grammar), and a token-budget bound derived from the schema's own limits. The grammar guarantees "valid so far", not
"finished": a sequence is finished only when its matcher terminated (accepted the stop token).
Does not know: models, caches or the generation loop — `generate.py` calls `mask` and `accept`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import torch
import xgrammar as xgr

from logwarden.errors import ModelError

# Characters of JSON around a value that a bound must also cover: quotes, commas, keys' colons.
_STRUCTURE_SLACK = 8
COMPILE_THREADS = min(8, os.cpu_count() or 1)


def schema_key(schema: dict) -> str:
    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()


@dataclass(slots=True)
class CompileStats:
    """How the cache did: grammars compiled, seconds spent compiling, requests served from the cache."""

    compiled: int = 0
    compile_s: float = 0.0
    hits: int = 0

    def as_dict(self) -> dict:
        return {"compiled": self.compiled, "compile_s": round(self.compile_s, 4), "hits": self.hits}


class GrammarCache:
    """Compiled grammars per schema for one tokenizer, least recently used evicted beyond `max_size`
    (compiling costs ms to seconds, reuse is free)."""

    def __init__(self, tokenizer: Any, vocab_size: int, stop_token_ids: Sequence[int], *, max_size: int = 256):
        self.vocab_size = vocab_size
        self.max_size = max_size
        self.stats = CompileStats()
        self._info = xgr.TokenizerInfo.from_huggingface(
            tokenizer, vocab_size=vocab_size, stop_token_ids=list(stop_token_ids))
        self._compiler = xgr.GrammarCompiler(self._info, max_threads=2)
        self._compiled: OrderedDict[str, xgr.CompiledGrammar] = OrderedDict()
        self._keep = _control_free_mask(self._info.decoded_vocab, vocab_size)

    def compiled(self, schema: dict) -> xgr.CompiledGrammar:
        key = schema_key(schema)
        if key in self._compiled:
            self._compiled.move_to_end(key)
            self.stats.hits += 1
            return self._compiled[key]
        start = time.perf_counter()
        grammar = self._compile(schema)
        self.stats.compiled += 1
        self.stats.compile_s += time.perf_counter() - start
        self._compiled[key] = grammar
        if len(self._compiled) > self.max_size:
            self._compiled.popitem(last=False)
        return grammar

    def __len__(self) -> int:
        return len(self._compiled)

    def _compile(self, schema: dict) -> xgr.CompiledGrammar:
        try:
            # any_whitespace=False: no free whitespace, so a small model cannot pad forever
            return self._compiler.compile_json_schema(json.dumps(schema), any_whitespace=False)
        except Exception as exc:  # xgrammar raises plain RuntimeError/ValueError on bad schemas
            raise ModelError(f"The JSON schema cannot be compiled to a grammar ({exc}); fix the "
                             f"schema (supported: JSON Schema draft 2020-12 subset of xgrammar).") from exc

    def constraint(self, schemas: Sequence[dict]) -> BatchConstraint:
        """One row per schema (rows of a batch may follow different grammars)."""
        self.prepare(schemas)
        return BatchConstraint([self.compiled(s) for s in schemas], self.vocab_size, self._keep)

    def prepare(self, schemas: Sequence[dict]) -> None:
        """Compile the schemas not cached yet on several threads (xgrammar compiles outside the GIL): a
        batch of per-window schemas is a batch of distinct grammars."""
        missing = list({schema_key(s): s for s in schemas if schema_key(s) not in self._compiled}.items())
        workers = min(len(missing), COMPILE_THREADS)
        if workers < 2:
            return
        start = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            grammars = list(pool.map(lambda item: self._compile(item[1]), missing))
        self.stats.compile_s += time.perf_counter() - start
        self.stats.compiled += len(missing)
        self.stats.hits -= len(missing)  # `constraint` looks each of them up once more
        for (key, _), grammar in zip(missing, grammars):
            self._compiled[key] = grammar
        while len(self._compiled) > self.max_size:
            self._compiled.popitem(last=False)


class BatchConstraint:
    """One matcher per sequence; rows are positions in the original batch. The whole batch's
    bitmask is filled by one `BatchGrammarMatcher` call (C++ threads, no per-row Python) and
    applied to the logits by one `apply_token_bitmask_inplace`."""

    def __init__(self, compiled: Sequence[xgr.CompiledGrammar], vocab_size: int, keep: torch.Tensor):
        batch_size = len(compiled)
        self.matchers = [xgr.GrammarMatcher(grammar) for grammar in compiled]
        self.vocab_size = vocab_size
        self._batch = xgr.BatchGrammarMatcher(max_threads=_mask_threads(batch_size))
        # pinned so the host→device copy of the mask is asynchronous on CUDA
        self._bitmask = _pinned(xgr.allocate_token_bitmask(batch_size, vocab_size))  # (B, ceil(V/32)) int32
        self._keep = keep  # (ceil(V/32),) int32
        self._filled = 0  # rows of the bitmask the last `fill` wrote

    def mask(self, logits: torch.Tensor, rows: Sequence[int]) -> None:
        """logits: (len(rows), V), modified in place so only grammar-valid tokens remain."""
        self.fill(rows)
        self.apply(logits)

    def fill(self, rows: Sequence[int]) -> None:
        """The bitmask of the listed rows' next tokens (CPU only: the generation loop calls this
        while the GPU still computes the logits it will be applied to)."""
        self._batch.batch_fill_next_token_bitmask([self.matchers[row] for row in rows], self._bitmask)
        self._filled = len(rows)

    def apply(self, logits: torch.Tensor) -> None:
        """Mask `logits` ((rows of the last `fill`, V)) in place with the filled bitmask."""
        live = self._bitmask[: self._filled]
        live &= self._keep  # in place: keeps the pinned buffer, so the copy below does not block
        bitmask = live.to(logits.device, non_blocking=True)
        xgr.apply_token_bitmask_inplace(logits, bitmask, vocab_size=self.vocab_size)

    def accept(self, row: int, token_id: int) -> None:
        self.accept_many([row], [token_id])

    def accept_many(self, rows: Sequence[int], token_ids: Sequence[int]) -> None:
        """Advance every listed row's matcher by its token, in one call."""
        accepted = xgr.BatchGrammarMatcher.batch_accept_token([self.matchers[r] for r in rows], list(token_ids))
        if not all(accepted):
            bad = [t for t, ok in zip(token_ids, accepted) if not ok]
            raise ModelError(f"internal: token(s) {bad} were sampled outside the grammar mask; "
                             "report this bug with the schema and model used.")

    def terminated(self, row: int) -> bool:
        return self.matchers[row].is_terminated()


def _mask_threads(batch_size: int) -> int:
    """Matchers per thread ≥ 4: below that, thread hand-off costs more than a row's fill (~0.1 ms)."""
    return max(1, min(8, batch_size // 4))


def _pinned(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.pin_memory() if torch.cuda.is_available() else tensor


def _max_string_length(node: dict) -> int:
    """maxLength, else the longest match of a pattern without unbounded repetition."""
    if "maxLength" in node:
        return node["maxLength"]
    if "pattern" in node:
        longest = re._parser.parse(node["pattern"]).getwidth()[1]  # the stdlib regex parser's own bound
        if longest < re._parser.MAXREPEAT:
            return longest
    raise ModelError(f"schema string has no length bound: {node}; add maxLength or a bounded pattern.")


def _control_free_mask(decoded_vocab: Sequence[bytes], vocab_size: int) -> torch.Tensor:
    """Bitmask row (xgrammar layout) that bans tokens containing raw control characters.

    xgrammar 0.2.9's JSON string rule admits raw U+0000–U+001F (a tab, a newline) inside strings;
    strict parsers (pydantic, RFC 8259) reject them. With `any_whitespace=False` the document
    never needs a raw control character (escapes are spelled with a backslash), so banning those
    tokens outright costs nothing and makes every finished answer parse.
    """
    keep = torch.ones(vocab_size, dtype=torch.bool)
    for token_id, text in enumerate(decoded_vocab[:vocab_size]):
        if any(byte < 0x20 for byte in text):
            keep[token_id] = False
    return _pack_bits(keep)


def _pack_bits(keep: torch.Tensor) -> torch.Tensor:
    """(V,) bool → (ceil(V/32),) int32 with bit j of word i = token 32*i + j, as xgrammar packs it."""
    words = (keep.numel() + 31) // 32
    padded = torch.zeros(words * 32, dtype=torch.int64)
    padded[: keep.numel()] = keep.to(torch.int64)
    weights = torch.tensor([1 << j for j in range(32)], dtype=torch.int64)
    packed = (padded.view(words, 32) * weights).sum(dim=1)
    return torch.where(packed >= 2**31, packed - 2**32, packed).to(torch.int32)


def token_bound(schema: dict) -> int:
    """An upper bound on tokens for any document of `schema` (every token is ≥ 1 character),
    so a `max_new_tokens` at least this large guarantees the grammar can close the JSON."""
    return _chars(schema, schema.get("$defs", {})) + 1  # + the stop token


def _chars(node: dict, defs: dict) -> int:
    if "$ref" in node:
        return _chars(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if "enum" in node or "const" in node:
        values = node.get("enum", [node.get("const")])
        return max(len(json.dumps(v)) for v in values)
    if "anyOf" in node or "oneOf" in node:
        return max(_chars(n, defs) for n in node.get("anyOf", node.get("oneOf", [])))
    return _chars_of_type(node, defs)


def _chars_of_type(node: dict, defs: dict) -> int:
    kind = node.get("type")
    if kind == "object":
        props = node.get("properties", {})
        return 2 + sum(len(json.dumps(k)) + _STRUCTURE_SLACK + _chars(v, defs) for k, v in props.items())
    if kind == "array":
        if "maxItems" not in node:
            raise ModelError(f"schema array without maxItems has no token bound: {node}; add maxItems.")
        return 2 + node["maxItems"] * (_chars(node.get("items", {}), defs) + 1)
    if kind == "string":
        return 2 + 6 * _max_string_length(node)  # a JSON escape like \u00e9 spends 6 characters
    if kind in ("integer", "number", "boolean", "null"):
        return 32
    raise ModelError(f"schema node without a bounded type: {node}; give it a type and limits.")

