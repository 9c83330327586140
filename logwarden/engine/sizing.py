"""How many rows fit a decode batch, from the model's config and the GPU's free memory.

Owns: the KV-cache bytes per token of a transformers config, a per-row memory estimate (KV for
prompt + answer, the float32 logits row and grammar masks, prefill activations), and the batch that
fits `torch.cuda.mem_get_info()`'s free bytes with headroom. It is an estimate: the engine's CUDA
OOM back-off (`local.py`) stays the safety net. Does not know: prompts, schemas or the loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Fraction of free memory left unplanned: allocator fragmentation, CUDA graph pools, cuBLAS workspaces.
HEADROOM = 0.2
# Prefill keeps a few (T, intermediate) activations alive per layer step: gate, up, their product.
_PREFILL_ACTIVATIONS = 3


@dataclass(frozen=True, slots=True)
class ModelShape:
    layers: int
    kv_heads: int
    head_dim: int
    hidden: int
    intermediate: int
    vocab: int

    @classmethod
    def of(cls, config: Any) -> ModelShape:
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
        return cls(layers=text.num_hidden_layers, kv_heads=text.num_key_value_heads, head_dim=head_dim,
                   hidden=text.hidden_size, intermediate=text.intermediate_size, vocab=text.vocab_size)


def kv_bytes_per_token(shape: ModelShape, dtype_bytes: int = 2) -> int:
    """Keys + values of every layer for one token of one row."""
    return 2 * shape.layers * shape.kv_heads * shape.head_dim * dtype_bytes


def row_bytes(shape: ModelShape, prompt_tokens: int, new_tokens: int, dtype_bytes: int = 2) -> int:
    """Memory one more row of a batch needs: its KV cache, logits (float32, plus the adjusted copy),
    and its share of the prefill's activations."""
    kv = kv_bytes_per_token(shape, dtype_bytes) * (prompt_tokens + new_tokens)
    logits = 2 * shape.vocab * 4
    prefill = prompt_tokens * shape.intermediate * dtype_bytes * _PREFILL_ACTIVATIONS
    return kv + logits + prefill


def batch_for_memory(free_bytes: int, shape: ModelShape, *, prompt_tokens: int, new_tokens: int,
                     dtype_bytes: int = 2, cap: int = 512, floor: int = 1) -> int:
    """Largest batch whose rows fit `free_bytes` minus the headroom, clamped to [floor, cap]."""
    usable = int(free_bytes * (1 - HEADROOM))
    fits = usable // row_bytes(shape, prompt_tokens, new_tokens, dtype_bytes)
    return max(floor, min(cap, fits))


def cuda_batch(model: Any, *, prompt_tokens: int, new_tokens: int, cap: int = 512, fallback: int = 8) -> int:
    """`batch_for_memory` with the CUDA device's free memory now; `fallback` off CUDA (CPU batches
    are bound by compute, not memory, and measured best around 8: docs/ENGINE.md)."""
    device = getattr(model, "device", None)
    if getattr(device, "type", "cpu") != "cuda":
        return fallback
    import torch  # only a CUDA model gets here: torch is loaded already

    free, _total = torch.cuda.mem_get_info(device)
    return batch_for_memory(free, ModelShape.of(model.config), prompt_tokens=prompt_tokens,
                            new_tokens=new_tokens, dtype_bytes=_cache_dtype_bytes(model), cap=cap)


def _cache_dtype_bytes(model: Any) -> int:
    """The KV cache takes the compute dtype (bf16 for nf4's QLoRA recipe), not the weights' storage."""
    import torch

    dtype = getattr(model, "dtype", torch.bfloat16)
    return 4 if dtype == torch.float32 else 2
