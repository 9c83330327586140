"""What a cold start reads from a GGUF's header, kept on disk so the next process skips the header.

Owns: one JSON file per GGUF, named by the GGUF's sha256 (its content, so another file or a
re-derived one never reads a stale entry), holding the header's scalar metadata (arrays — the
vocabulary and merges — left out) and the token counter's rebuilt `tokenizers` JSON. Reading the
header and rebuilding the BPE took ~0.8 s of every `logwarden triage`; loading this ~0.3 s. An
entry that is missing, unreadable, of another `FORMAT` or of another sha256 is rebuilt from the
header and written anew (atomically); no cache folder or no known sha256 means no cache.
Does not know: llama.cpp, where the GGUF came from, settings.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logwarden.engine.gguf_meta import read_metadata
from logwarden.engine.gguf_tokenizer import TokenCounter, counter_from_json, token_counter

FORMAT = 1  # of the entry below; bump when it, or what token_counter builds, changes
DISABLE_VARIABLE = "LOGWARDEN_NO_START_CACHES"  # set (to anything but "") for the baseline of bench/triage_cold.py


@dataclass(frozen=True, slots=True)
class HeaderFacts:
    metadata: dict[str, Any]  # the scalar keys; arrays dropped
    tokens: TokenCounter


def caches_disabled() -> bool:
    return bool(os.environ.get(DISABLE_VARIABLE))


def header_facts(gguf: Path, *, sha256: str | None, cache_dir: Path | None) -> HeaderFacts:
    """The header's scalar metadata and token counter, from the cache entry when it matches."""
    if cache_dir is None or sha256 is None or caches_disabled():
        return _from_header(gguf)
    entry = cache_dir / f"{sha256}.json"
    if (facts := _read(entry, sha256)) is not None:
        return facts
    metadata = read_metadata(gguf)
    facts = HeaderFacts(_scalars(metadata), token_counter(metadata))
    _write(entry, {"format": FORMAT, "sha256": sha256, "metadata": facts.metadata, "kind": facts.tokens.kind,
                   "exact": facts.tokens.exact, "tokenizer": facts.tokens.tokenizer_json})
    return facts


def _from_header(gguf: Path) -> HeaderFacts:
    metadata = read_metadata(gguf)
    return HeaderFacts(_scalars(metadata), token_counter(metadata))


def _scalars(metadata: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in metadata.items() if not isinstance(value, list)}


def _read(entry: Path, sha256: str) -> HeaderFacts | None:
    try:
        data = json.loads(entry.read_text(encoding="utf-8"))
        if data["format"] != FORMAT or data["sha256"] != sha256:
            return None
        return HeaderFacts(dict(data["metadata"]),
                           counter_from_json(data["tokenizer"], exact=bool(data["exact"]), kind=str(data["kind"])))
    except Exception:  # a damaged entry is rebuilt, whatever broke (tokenizers raises a bare Exception)
        return None


def _write(entry: Path, data: dict[str, Any]) -> None:
    """Best effort: a folder that cannot be written costs the next start the header, nothing else."""
    partial = entry.with_name(f".{entry.name}.{os.getpid()}.part")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(data), encoding="utf-8")
        partial.rename(entry)
    except OSError:
        partial.unlink(missing_ok=True)
