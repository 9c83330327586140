"""The head of a GGUF file: its key/value metadata (architecture, vocabulary, chat template…) and,
for whoever rewrites the file, the value types and the tensor directory (names, shapes, types,
where each tensor's bytes start).

Owns: reading that header, and nothing after it. `gguf.GGUFReader` would do it too but maps every
array item to a numpy view as it opens the file (~12 s for a Qwen vocabulary of 152k tokens and
151k merges here); the header is a few MB of length-prefixed values, read here in ~0.4 s.
Does not know: tensor contents, llama.cpp, tokenization (`gguf_tokenizer.py`).
Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logwarden.errors import ModelError

MAGIC = b"GGUF"
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9
_DEFAULT_ALIGNMENT = 32


@dataclass(frozen=True, slots=True)
class Field:
    """One key's value and its GGUF types (`item_kind`: the element type of an array)."""

    value: Any
    kind: int
    item_kind: int | None = None


@dataclass(frozen=True, slots=True)
class TensorEntry:
    name: str
    dims: tuple[int, ...]  # GGUF order: the row length (ne0) first
    ggml_type: int
    offset: int  # from the start of the file

    @property
    def shape(self) -> tuple[int, ...]:
        """numpy order: (rows, row length) for a matrix."""
        return tuple(reversed(self.dims))


@dataclass(frozen=True, slots=True)
class Header:
    fields: dict[str, Field]
    tensors: list[TensorEntry]

    def get(self, key: str, default: Any = None) -> Any:
        found = self.fields.get(key)
        return default if found is None else found.value


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
    return {key: field.value for key, field in read_header(path, tensors=False).fields.items()}


def read_header(path: Path, *, tensors: bool = True) -> Header:
    """The typed key/values and (unless `tensors=False`) the tensor directory; ModelError when the
    file is not a GGUF."""
    try:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _parse(data, tensors)
    except (OSError, ValueError, struct.error, UnicodeDecodeError) as exc:
        raise ModelError(f"{path} is not a readable GGUF file ({exc}). Fix: give a complete .gguf model "
                         f"file (llama.cpp's format), or use --model embedded.") from exc


def _parse(data: Any, with_tensors: bool) -> Header:
    if bytes(data[:4]) != MAGIC:
        raise ValueError("no GGUF magic at the start")
    cursor = _Cursor(data, 4)
    version, tensor_count, kv_count = cursor.unpack("I")[0], *cursor.unpack("Q", 2)
    if version < 2:
        raise ValueError(f"GGUF version {version} is too old")
    fields: dict[str, Field] = {}
    for _ in range(kv_count):
        key = cursor.string()
        (kind,) = cursor.unpack("I")
        item_kind = struct.unpack_from("<I", data, cursor.pos)[0] if kind == _ARRAY else None
        fields[key] = Field(cursor.value(kind), kind, item_kind)
    if not with_tensors:
        return Header(fields, [])
    alignment = fields["general.alignment"].value if "general.alignment" in fields else _DEFAULT_ALIGNMENT
    return Header(fields, _tensor_directory(cursor, tensor_count, alignment))


def _tensor_directory(cursor: _Cursor, count: int, alignment: int) -> list[TensorEntry]:
    """Tensor infos follow the key/values; their offsets count from the aligned end of the infos."""
    infos = []
    for _ in range(count):
        name = cursor.string()
        (n_dims,) = cursor.unpack("I")
        dims = cursor.unpack("Q", n_dims)
        ggml_type, offset = cursor.unpack("I")[0], cursor.unpack("Q")[0]
        infos.append((name, dims, ggml_type, offset))
    start = -(-cursor.pos // alignment) * alignment
    return [TensorEntry(name, tuple(dims), ggml_type, start + offset) for name, dims, ggml_type, offset in infos]
