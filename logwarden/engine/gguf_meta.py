"""The key/value metadata at the head of a GGUF file (architecture, vocabulary, chat template…).

Owns: reading that header section, and nothing after it. `gguf.GGUFReader` would do it too but
maps every array item to a numpy view as it opens the file (~12 s for a Qwen vocabulary of 152k
tokens and 151k merges here); the header is a few MB of length-prefixed values, read here in
~0.4 s. Does not know: tensors, llama.cpp, tokenization (`gguf_tokenizer.py`).
Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path
from typing import Any

from logwarden.errors import ModelError

MAGIC = b"GGUF"
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


class _Cursor:
    """Little-endian values read one after another from a buffer."""

    def __init__(self, data: Any, pos: int = 0):
        self.data = data
        self.pos = pos

    def unpack(self, fmt: str, count: int = 1) -> tuple:
        values = struct.unpack_from(f"<{count}{fmt}", self.data, self.pos)
        self.pos += struct.calcsize(f"<{count}{fmt}")
        return values

    def string(self) -> str:
        (size,) = self.unpack("Q")
        text = bytes(self.data[self.pos:self.pos + size]).decode("utf-8", "replace")
        self.pos += size
        return text

    def value(self, kind: int) -> Any:
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item_kind, count = self.unpack("I")[0], self.unpack("Q")[0]
            if item_kind in _SCALARS:
                return list(self.unpack(_SCALARS[item_kind], count))
            return [self.value(item_kind) for _ in range(count)]
        if kind not in _SCALARS:
            raise ValueError(f"unknown GGUF value type {kind}")
        return self.unpack(_SCALARS[kind])[0]


def read_metadata(path: Path) -> dict[str, Any]:
    """All key/value pairs of a GGUF file; ModelError when it is not one."""
    try:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _parse(data)
    except (OSError, ValueError, struct.error, UnicodeDecodeError) as exc:
        raise ModelError(f"{path} is not a readable GGUF file ({exc}). Fix: give a complete .gguf model "
                         f"file (llama.cpp's format), or use --model embedded.") from exc


def _parse(data: Any) -> dict[str, Any]:
    if bytes(data[:4]) != MAGIC:
        raise ValueError("no GGUF magic at the start")
    cursor = _Cursor(data, 4)
    version, _tensors, kv_count = cursor.unpack("I")[0], *cursor.unpack("Q", 2)
    if version < 2:
        raise ValueError(f"GGUF version {version} is too old")
    metadata: dict[str, Any] = {}
    for _ in range(kv_count):
        key = cursor.string()
        (kind,) = cursor.unpack("I")
        metadata[key] = cursor.value(kind)
    return metadata
