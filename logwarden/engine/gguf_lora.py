"""A peft LoRA adapter (adapter_config.json + adapter_model.safetensors) converted to a GGUF LoRA
that llama.cpp applies on top of a GGUF base, cached by the adapter's sha256.

Owns: the conversion, done as llama.cpp's `convert_lora_to_gguf.py` does it with the `gguf`
package (general.type=adapter, adapter.type=lora, adapter.lora.alpha; per linear layer
`<gguf tensor>.lora_a` = A (r × in) and `.lora_b` = B (out × r)), but without torch: the
safetensors are read with numpy (bf16 widened to fp32). llama.cpp scales each layer by alpha / r
with r read from the tensor; peft's per-layer `alpha_pattern` and rsLoRA (alpha / √r) are folded
into B so the product is the one peft computes. The cache file appears atomically. The same
per-layer updates (`lora_updates`: GGUF tensor name, A, B, peft's scale) are what
`gguf_derive.py` merges into the weights.
Does not know: llama.cpp, engines, settings (the cache folder comes in as an argument).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from logwarden.errors import ModelError

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
# Architectures whose GGUF conversion keeps every linear layer as in the HF checkpoint (llama-family
# conversions permute q/k for their rope layout, MoE ones stack experts: their adapters would need
# the same reshaping, which is not written here).
SUPPORTED_ARCHS = ("qwen2", "qwen3")
_PEFT_PREFIX = "base_model.model."
_LORA_KEY = re.compile(r"^(?P<module>.+)\.lora_(?P<part>[AB])\.weight$")


@dataclass(frozen=True, slots=True)
class LoraConfig:
    alpha: float
    rslora: bool
    alpha_pattern: dict[str, float]

    def scaling(self, module: str, rank: int) -> float:
        """peft's scale of `module`'s update: alpha / r, or alpha / √r with rsLoRA."""
        alpha = _pattern_value(self.alpha_pattern, module, self.alpha)
        return alpha / math.sqrt(rank) if self.rslora else alpha / rank


def adapter_sha256(adapter_dir: Path) -> str:
    _check_files(adapter_dir)
    h = hashlib.sha256()
    for name in ADAPTER_FILES:
        h.update(name.encode())
        h.update((adapter_dir / name).read_bytes())
    return h.hexdigest()


def ensure_gguf_lora(adapter_dir: Path, *, arch: str, block_count: int, cache_dir: Path) -> Path:
    """The converted adapter in `cache_dir/adapters/`, converting it the first time."""
    _check_files(adapter_dir)
    digest = adapter_sha256(adapter_dir)
    target = cache_dir / "adapters" / f"{adapter_dir.name}-{digest[:12]}-{arch}.gguf"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}.part")
        try:
            convert(adapter_dir, partial, arch=arch, block_count=block_count)
            partial.rename(target)  # atomic: a concurrent run sees the whole file or none
        finally:
            partial.unlink(missing_ok=True)
    return target


def convert(adapter_dir: Path, out: Path, *, arch: str, block_count: int) -> None:
    import gguf

    config = read_config(adapter_dir)
    updates = lora_updates(adapter_dir, arch=arch, block_count=block_count)
    writer = gguf.GGUFWriter(out, arch=arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, config.alpha)
    for update in updates:
        # llama.cpp multiplies by alpha / rank; make that peft's own scale for this layer
        fix = update.scale / (config.alpha / update.rank)
        writer.add_tensor(f"{update.target}.lora_a", update.a)
        writer.add_tensor(f"{update.target}.lora_b", update.b if fix == 1.0 else (update.b * fix).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@dataclass(frozen=True, slots=True)
class LoraUpdate:
    """One adapted weight: its GGUF tensor name and peft's update scale · B @ A."""

    target: str  # e.g. blk.0.attn_q.weight
    a: np.ndarray  # (r, in)
    b: np.ndarray  # (out, r)
    scale: float

    @property
    def rank(self) -> int:
        return self.a.shape[0]

    def delta(self) -> np.ndarray:
        """(out, in) fp32, the layout GGUF stores a weight in (rows = outputs)."""
        return np.float32(self.scale) * (self.b @ self.a)


def lora_updates(adapter_dir: Path, *, arch: str, block_count: int) -> list[LoraUpdate]:
    """Every layer of the adapter, named as in a `arch` GGUF with `block_count` blocks."""
    import gguf

    _check_files(adapter_dir)
    config = read_config(adapter_dir)
    if arch not in SUPPORTED_ARCHS:
        raise ModelError(f"Converting a peft adapter for a {arch!r} GGUF is not supported (supported: "
                         f"{', '.join(SUPPORTED_ARCHS)}). Fix: use --engine transformers for this model.")
    names = gguf.get_tensor_name_map(_model_arch(arch), block_count)
    updates = []
    for name, a, b in lora_pairs(adapter_dir):
        target = names.get_name(name, try_suffixes=(".weight",))
        if target is None:
            raise ModelError(f"Adapter layer {name} has no counterpart in a {arch} GGUF; this adapter was "
                             f"trained for another model.")
        updates.append(LoraUpdate(target, a, b, config.scaling(name, a.shape[0])))
    return updates


def read_config(adapter_dir: Path) -> LoraConfig:
    raw = json.loads((adapter_dir / "adapter_config.json").read_text())
    unsupported = {
        "peft_type is not LORA": raw.get("peft_type", "LORA") != "LORA",
        "DoRA (use_dora)": raw.get("use_dora"),
        "trained bias terms (bias/lora_bias)": raw.get("bias", "none") != "none" or raw.get("lora_bias"),
        "extra saved modules (modules_to_save)": raw.get("modules_to_save"),
        "fan_in_fan_out (Conv1D) layers": raw.get("fan_in_fan_out"),
        "LoRA on parameters (target_parameters)": raw.get("target_parameters"),
    }
    if found := [what for what, present in unsupported.items() if present]:
        raise ModelError(f"The adapter in {adapter_dir} uses {', '.join(found)}, which a GGUF LoRA cannot "
                         f"express. Fix: use --engine transformers with this adapter.")
    return LoraConfig(alpha=float(raw["lora_alpha"]), rslora=bool(raw.get("use_rslora")),
                      alpha_pattern={k: float(v) for k, v in (raw.get("alpha_pattern") or {}).items()})


def lora_pairs(adapter_dir: Path) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(base weight name as in the HF model, A (r, in), B (out, r)) per adapted layer, fp32."""
    parts: dict[str, dict[str, np.ndarray]] = {}
    for key, array in read_safetensors(adapter_dir / "adapter_model.safetensors").items():
        match = _LORA_KEY.match(key.removeprefix(_PEFT_PREFIX))
        if match is None:
            raise ModelError(f"Adapter tensor {key!r} is not a LoRA A/B matrix (embedding LoRA and trained "
                             f"extra weights have no GGUF LoRA form). Fix: use --engine transformers.")
        parts.setdefault(f"{match['module']}.weight", {})[match["part"]] = array
    pairs = []
    for name, ab in sorted(parts.items()):
        if set(ab) != {"A", "B"} or ab["A"].shape[0] != ab["B"].shape[1]:
            raise ModelError(f"Adapter layer {name} lacks a matching lora_A/lora_B pair; the adapter is damaged.")
        pairs.append((name, ab["A"], ab["B"]))
    return pairs


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file as fp32 numpy (numpy has no bf16: widen its bits)."""
    from gguf.utility import SafetensorsLocal

    with SafetensorsLocal(path) as tensors:
        return {name: _as_float32(t.dtype, t.mmap_bytes(), t.shape) for name, t in tensors.items()}


def _as_float32(dtype: str, raw: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if dtype == "BF16":
        return (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
    if dtype in ("F16", "F32"):
        return raw.view(np.float16 if dtype == "F16" else np.float32).astype(np.float32).reshape(shape)
    raise ModelError(f"Adapter tensors of type {dtype} are not supported (expected BF16, F16 or F32).")


def _pattern_value(patterns: dict[str, float], module: str, default: float) -> float:
    """peft's rule: the first pattern that matches the end of the module's dotted name."""
    module = module.removesuffix(".weight")
    return next((v for k, v in patterns.items() if re.match(rf"(.*\.)?({k})$", module)), default)


def _model_arch(arch: str) -> Any:
    import gguf

    return next(a for a, name in gguf.MODEL_ARCH_NAMES.items() if name == arch)


def _check_files(adapter_dir: Path) -> None:
    missing = [name for name in ADAPTER_FILES if not (adapter_dir / name).is_file()]
    if missing:
        raise ModelError(f"Adapter {adapter_dir} is incomplete (missing {', '.join(missing)}). Fix: give the "
                         f"folder written by `logwarden train` / peft's save_pretrained, or --adapter none.")
