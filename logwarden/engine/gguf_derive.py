"""A GGUF derived for llama.cpp's fast CPU kernels: the feed-forward weights requantized to Q4_0
(the attention projections to Q8_0), with a peft LoRA adapter merged into them first.

Why: the embedded "Q4_K_M" GGUF is mostly Q5_0 and Q8_0 (its 896-wide tensors made llama-quantize
fall back from the K-quants), which llama.cpp's AVX2 repacked GEMM does not cover; Q4_0 it does,
and prefill is what this project's runs spend their time on (docs/ENGINE.md has the figures).
A merged adapter also costs nothing per token, where a runtime LoRA adds two matmuls per layer.

Owns: the recipe — the feed-forward matrices of every block become Q4_0, its attention projections
Q8_0 (4-bit ones shifted risk levels; `_Q8_0_IN_BLOCKS`); a weight outside the blocks that the
adapter changes becomes Q8_0; everything else is copied
byte for byte (token_embd is a row lookup, not a GEMM; output, norms and biases keep their
precision); merging (W + scale · B @ A on the dequantized fp32 rows, what peft's merge computes);
writing (GGUFWriter, the base's metadata copied with its types, `general.file_type` MOSTLY_Q4_0,
the provenance under `logwarden.derived.*`); and the cache: one file per (base sha256, adapter
sha256, recipe) in `<model cache>/derived/`, its own sha256 recorded beside it and checked on every
load, built under a file lock into a temp file that is renamed into place.
Does not know: llama.cpp, engines, settings, which adapter a model gets by default.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from logwarden.engine.embedded import locked, sha256_of
from logwarden.engine.gguf_lora import LoraUpdate, adapter_sha256, lora_updates
from logwarden.engine.gguf_meta import Header, TensorEntry, read_header
from logwarden.errors import ModelError

# Names what `derive` writes: change it whenever the bytes it would write change (the cache key).
RECIPE = "q4_0-merged-2"
_Q4_0, _Q8_0 = 2, 8  # ggml type ids
# Attention projections stay at 8 bits: all-Q4_0 weights moved the top risk level (high → medium)
# on 4 of 40 held-out prompts against the shipped model + LoRA, these at Q8_0 on 2 (all at Q8_0:
# 0), at no prefill cost that could be measured — they are ~12% of a block (docs/ENGINE.md).
_Q8_0_IN_BLOCKS = ("attn_q", "attn_k", "attn_v", "attn_output")
_BLOCK = 32  # Q4_0 and Q8_0 quantize rows in blocks of 32 values


@dataclass(frozen=True, slots=True)
class Derived:
    path: Path
    sha256: str
    base_sha256: str
    adapter_sha256: str | None  # None: no adapter merged


def find_derived(*, base_sha256: str, adapter: Path | None, cache_dir: Path) -> Derived | None:
    """The cached derived file for this base and adapter, if it is there and its bytes are the
    ones recorded; None otherwise (a damaged file is never loaded: it is derived again)."""
    path = _target(base_sha256, adapter, cache_dir)
    manifest = _manifest_path(path)
    try:
        recorded = json.loads(manifest.read_text())
        if not path.is_file() or path.stat().st_size != recorded["size"]:
            return None
    except (OSError, ValueError, KeyError):
        return None
    if sha256_of([path]) != recorded["sha256"]:
        _say(f"logwarden: the derived model {path} does not match its recorded sha256; deriving it again.")
        return None
    return Derived(path, recorded["sha256"], base_sha256, recorded.get("adapter_sha256"))


def ensure_derived(base: Path, *, base_sha256: str, adapter: Path | None, cache_dir: Path) -> Derived:
    """The derived file from the cache, or derived now from `base` (whose bytes the caller has
    checked against `base_sha256`)."""
    if found := find_derived(base_sha256=base_sha256, adapter=adapter, cache_dir=cache_dir):
        return found
    path = _target(base_sha256, adapter, cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path.with_name(f".{path.name}.lock")):
        if found := find_derived(base_sha256=base_sha256, adapter=adapter, cache_dir=cache_dir):
            return found  # another process derived it while we waited
        return _build(base, path, base_sha256=base_sha256, adapter=adapter)


def _target(base_sha256: str, adapter: Path | None, cache_dir: Path) -> Path:
    adapter_sha = adapter_sha256(adapter) if adapter else None
    key = hashlib.sha256(f"{base_sha256}\n{adapter_sha}\n{RECIPE}".encode()).hexdigest()
    tag = adapter.name if adapter else "base"
    return cache_dir / "derived" / f"{base_sha256[:12]}-{tag}-{key[:12]}.q4_0.gguf"


def _manifest_path(path: Path) -> Path:
    return path.with_suffix(".json")


def _build(base: Path, path: Path, *, base_sha256: str, adapter: Path | None) -> Derived:
    began = time.perf_counter()
    what = f" with the adapter {adapter.name} merged" if adapter else ""
    _say(f"logwarden: deriving a Q4_0 model{what} for llama.cpp's fast CPU kernels into {path} — once…")
    partial = path.with_name(f".{path.name}.{os.getpid()}.part")
    adapter_sha = adapter_sha256(adapter) if adapter else None
    try:
        derive(base, partial, adapter=adapter,
               provenance={"base_sha256": base_sha256, "adapter": adapter.name if adapter else "",
                           "adapter_sha256": adapter_sha or "", "recipe": RECIPE})
        digest = sha256_of([partial])
        _manifest_path(path).write_text(json.dumps({
            "sha256": digest, "size": partial.stat().st_size, "base_sha256": base_sha256,
            "adapter": str(adapter) if adapter else None, "adapter_sha256": adapter_sha, "recipe": RECIPE,
            "seconds": round(time.perf_counter() - began, 1)}, indent=1))
        partial.rename(path)  # atomic: a reader sees the whole file or none
    finally:
        partial.unlink(missing_ok=True)
    _say(f"logwarden: derived model ready in {time.perf_counter() - began:.0f} s (sha256 {digest[:12]}…)")
    return Derived(path, digest, base_sha256, adapter_sha)


def derive(base: Path, out: Path, *, adapter: Path | None = None, provenance: dict[str, str] | None = None) -> None:
    """Write `base` with its block weights as Q4_0 and `adapter` (a peft folder) merged, to `out`.
    Tensor by tensor: only one fp32 matrix is in memory at a time."""
    import gguf

    header = read_header(base)
    arch = header.get("general.architecture")
    updates = _updates(adapter, header) if adapter else {}
    plan = [(t, _target_type(t, t.name in updates)) for t in header.tensors]
    writer = gguf.GGUFWriter(out, arch=arch)
    _copy_metadata(header, writer, provenance or {})
    for t, qtype in plan:
        writer.add_tensor_info(t.name, _byte_shape(t.shape, qtype), np.dtype(np.uint8), _nbytes(t.shape, qtype),
                               raw_dtype=gguf.GGMLQuantizationType(qtype))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    progress = _Progress(len(plan))
    data = np.memmap(base, np.uint8, mode="r")
    for t, qtype in plan:
        raw = data[t.offset:t.offset + _nbytes(t.shape, t.ggml_type)]
        writer.write_tensor_data(_converted(raw, t, qtype, updates.get(t.name)))
        progress.step()
    writer.close()


def _updates(adapter: Path, header: Header) -> dict[str, LoraUpdate]:
    arch = header.get("general.architecture")
    updates = lora_updates(adapter, arch=arch, block_count=int(header.get(f"{arch}.block_count", 0)))
    shapes = {t.name: t.shape for t in header.tensors}
    for u in updates:
        if shapes.get(u.target) != (u.b.shape[0], u.a.shape[1]):
            raise ModelError(f"Adapter layer {u.target} is {u.b.shape[0]}×{u.a.shape[1]}, the model's is "
                             f"{shapes.get(u.target)}; this adapter was trained for another model.")
    return {u.target: u for u in updates}


def _target_type(t: TensorEntry, adapted: bool) -> int:
    """Q4_0 for the feed-forward matrices (~88% of a block's weights: the GEMMs prefill spends its
    time in), Q8_0 for the attention projections and for another weight the adapter changes;
    otherwise the base's own type, untouched."""
    matrix = len(t.dims) == 2 and t.dims[0] % _BLOCK == 0
    if matrix and t.name.startswith("blk."):
        return _Q8_0 if t.name.split(".")[2] in _Q8_0_IN_BLOCKS else _Q4_0
    if adapted:
        if not matrix:
            raise ModelError(f"The adapter changes {t.name} {t.shape}, which cannot be requantized; "
                             f"use --quant q4_k_m (the adapter at run time).")
        return _Q8_0
    return t.ggml_type


def _converted(raw: np.ndarray, t: TensorEntry, qtype: int, update: LoraUpdate | None) -> np.ndarray:
    """The tensor's bytes in `qtype`: copied when nothing changes (no second rounding)."""
    if qtype == t.ggml_type and update is None:
        return raw
    from gguf import GGMLQuantizationType, quants

    weights = quants.dequantize(raw.reshape(_byte_shape(t.shape, t.ggml_type)), GGMLQuantizationType(t.ggml_type))
    if update is not None:
        weights = weights + update.delta()  # (out, in) both: GGUF rows are the outputs, as in peft
    return quants.quantize(weights.astype(np.float32, copy=False), GGMLQuantizationType(qtype)).view(np.uint8)


def _copy_metadata(header: Header, writer, provenance: dict[str, str]) -> None:
    """Every key of the base with its own types, in order; the file type says Q4_0 now."""
    from gguf import GGUFValueType, LlamaFileType

    for key, field in header.fields.items():
        if key == "general.architecture":  # the writer puts it first itself
            continue
        if key == "general.file_type":
            writer.add_uint32(key, int(LlamaFileType.MOSTLY_Q4_0))
            continue
        sub_type = GGUFValueType(field.item_kind) if field.item_kind is not None else None
        writer.add_key_value(key, field.value, GGUFValueType(field.kind), sub_type=sub_type)
    if "general.file_type" not in header.fields:
        writer.add_uint32("general.file_type", int(LlamaFileType.MOSTLY_Q4_0))
    for key, value in provenance.items():
        writer.add_key_value(f"logwarden.derived.{key}", value, GGUFValueType.STRING)


def _byte_shape(shape: tuple[int, ...], ggml_type: int) -> tuple[int, ...]:
    from gguf import GGMLQuantizationType
    from gguf.quants import quant_shape_to_byte_shape

    return quant_shape_to_byte_shape(shape, GGMLQuantizationType(ggml_type))


def _nbytes(shape: tuple[int, ...], ggml_type: int) -> int:
    return int(np.prod(_byte_shape(shape, ggml_type)))


class _Progress:
    """A line on stderr every quarter of the tensors: deriving the 0.5B model takes a while."""

    def __init__(self, total: int):
        self.total, self.done, self.began, self.next_mark = total, 0, time.perf_counter(), 0.25

    def step(self) -> None:
        self.done += 1
        if self.done / self.total >= self.next_mark and self.done < self.total:
            _say(f"logwarden:   {self.done}/{self.total} tensors, {time.perf_counter() - self.began:.0f} s")
            self.next_mark += 0.25


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
