"""A tiny random Qwen2 as a GGUF that llama.cpp loads (hidden 64, 2 layers, 4 heads, 2 KV heads, the
REAL 151,936-token vocabulary, merges and chat template, copied from the embedded GGUF's header), and
a peft LoRA adapter for it written by hand. No torch: numpy and the `gguf` package.

Weights are stored as the embedded file stores its own — Q5_0 attention, Q8_0 feed-forward and
output — so deriving Q4_0 from it dequantizes the same types. Writing one takes well under a second.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HIDDEN, LAYERS, HEADS, KV_HEADS, FFN = 64, 2, 4, 2, 128
KV_WIDTH = HIDDEN // HEADS * KV_HEADS
# HF module → (GGUF name, (out, in))
LINEAR = {
    "self_attn.q_proj": ("attn_q", (HIDDEN, HIDDEN)),
    "self_attn.k_proj": ("attn_k", (KV_WIDTH, HIDDEN)),
    "self_attn.v_proj": ("attn_v", (KV_WIDTH, HIDDEN)),
    "self_attn.o_proj": ("attn_output", (HIDDEN, HIDDEN)),
    "mlp.gate_proj": ("ffn_gate", (FFN, HIDDEN)),
    "mlp.up_proj": ("ffn_up", (FFN, HIDDEN)),
    "mlp.down_proj": ("ffn_down", (HIDDEN, FFN)),
}


def embedded_gguf() -> Path:
    from logwarden.app.config import get_settings
    from logwarden.engine.embedded import PACKS, ensure_gguf

    return ensure_gguf(PACKS["embedded"], get_settings().model_cache)


def write_tiny_qwen2(path: Path, *, seed: int = 0, std: float = 0.2) -> Path:
    """std 0.2, not 0.02: with tiny weights every prompt yields the same token and identity
    tests would prove nothing."""
    import gguf

    from logwarden.engine.gguf_meta import read_header

    rng = np.random.default_rng(seed)
    vocab = read_header(embedded_gguf(), tensors=False).fields
    writer = gguf.GGUFWriter(path, arch="qwen2")
    writer.add_name("tiny-random-qwen2")
    for key, value in {"context_length": 4096, "embedding_length": HIDDEN, "block_count": LAYERS,
                       "feed_forward_length": FFN, "attention.head_count": HEADS,
                       "attention.head_count_kv": KV_HEADS}.items():
        writer.add_uint32(f"qwen2.{key}", value)
    writer.add_float32("qwen2.rope.freq_base", 1_000_000.0)
    writer.add_float32("qwen2.attention.layer_norm_rms_epsilon", 1e-6)
    writer.add_uint32("general.file_type", int(gguf.LlamaFileType.MOSTLY_Q8_0))
    for key, field in vocab.items():
        if key.startswith("tokenizer."):
            sub = gguf.GGUFValueType(field.item_kind) if field.item_kind is not None else None
            writer.add_key_value(key, field.value, gguf.GGUFValueType(field.kind), sub_type=sub)
    n_vocab = len(vocab["tokenizer.ggml.tokens"].value)
    tensors = {"token_embd.weight": (rng.normal(0, std, (n_vocab, HIDDEN)), "Q8_0")}
    for layer in range(LAYERS):
        for name, (out, inp) in {v[0]: v[1] for v in LINEAR.values()}.items():
            tensors[f"blk.{layer}.{name}.weight"] = (rng.normal(0, std, (out, inp)), "Q5_0" if "attn" in name else "Q8_0")
        for name, width in (("attn_q", HIDDEN), ("attn_k", KV_WIDTH), ("attn_v", KV_WIDTH)):
            tensors[f"blk.{layer}.{name}.bias"] = (rng.normal(0, std, (width,)), "F32")
        for norm in ("attn_norm", "ffn_norm"):
            tensors[f"blk.{layer}.{norm}.weight"] = (np.ones(HIDDEN), "F32")
    tensors["output_norm.weight"] = (np.ones(HIDDEN), "F32")
    tensors["output.weight"] = (rng.normal(0, std, (n_vocab, HIDDEN)), "Q8_0")
    for name, (values, kind) in tensors.items():
        qtype = gguf.GGMLQuantizationType[kind]
        data = gguf.quants.quantize(values.astype(np.float32), qtype)
        writer.add_tensor(name, data, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], dtype: str) -> None:
    """The safetensors layout written by hand, so bf16 (which numpy lacks) can be written too."""
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        if dtype == "BF16":
            blob = (array.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()
        else:
            blob = array.astype({"F32": np.float32, "F16": np.float16}[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    raw = json.dumps(header).encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + b"".join(blobs))


def write_tiny_adapter(folder: Path, *, seed: int = 1, rank: int = 4, alpha: float = 8.0, std: float = 0.3,
                       modules=tuple(LINEAR), config: dict | None = None) -> Path:
    """A peft LoRA on `modules` of every layer of the tiny model (B non-zero: a trained adapter)."""
    rng = np.random.default_rng(seed)
    tensors = {}
    for layer in range(LAYERS):
        for module in modules:
            out, inp = LINEAR[module][1]
            prefix = f"base_model.model.model.layers.{layer}.{module}"
            tensors[f"{prefix}.lora_A.weight"] = rng.normal(0, std, (rank, inp)).astype(np.float32)
            tensors[f"{prefix}.lora_B.weight"] = rng.normal(0, std, (out, rank)).astype(np.float32)
    folder.mkdir(parents=True, exist_ok=True)
    write_safetensors(folder / "adapter_model.safetensors", tensors, "F32")
    base = {"peft_type": "LORA", "r": rank, "lora_alpha": alpha, "use_rslora": False, "use_dora": False,
            "bias": "none", "modules_to_save": None, "alpha_pattern": {}, "rank_pattern": {},
            "target_modules": [m.split(".")[-1] for m in modules]}
    (folder / "adapter_config.json").write_text(json.dumps(base | (config or {})))
    return folder


def read_tensors(path: Path) -> dict[str, tuple[np.ndarray, int]]:
    """Every tensor of a GGUF as fp32 (numpy order: rows first) with its ggml type."""
    from gguf import GGMLQuantizationType, quants

    from logwarden.engine.gguf_meta import read_header

    data = np.memmap(path, np.uint8, mode="r")
    tensors = {}
    for entry in read_header(path).tensors:
        qtype = GGMLQuantizationType(entry.ggml_type)
        byte_shape = quants.quant_shape_to_byte_shape(entry.shape, qtype)
        raw = np.array(data[entry.offset:entry.offset + int(np.prod(byte_shape))]).reshape(byte_shape)
        tensors[entry.name] = (quants.dequantize(raw, qtype), entry.ggml_type)
    return tensors
