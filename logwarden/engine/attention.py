"""Decode attention that reads the KV cache once: grouped-query attention without copying it.

Owns: the "sdpa_gqa_decode" attention implementation registered with transformers. For one new
token per row (decode) it computes attention as two batched matmuls over the cache with the query
heads grouped by their KV head; for longer queries (prefill) it is transformers' own SDPA path.

Why: with a padding mask, transformers' SDPA path cannot use SDPA's grouped-query mode, so it
copies every KV head `num_attention_heads / num_key_value_heads` times per layer per step before
attending. On the H200 that copy was 64% of the GPU time of a 7B decode step at batch 256
(8.3 of 12.9 s over 100 steps; docs/GPU.md). Reading the cache once removes it.
Does not know: caches, batching, sampling.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

NAME = "sdpa_gqa_decode"


def gqa_decode_attention(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                         attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                         **kwargs: Any) -> tuple[torch.Tensor, None]:
    """query (B, H, Q, D), key/value (B, Hkv, L, D), mask (B, 1, Q, L) boolean (True = attend) or
    additive → (B, Q, H, D), as transformers' attention functions return it."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if query.shape[2] != 1 or module.training:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    batch, heads, _, dim = query.shape
    kv_heads = key.shape[1]
    grouped = query.reshape(batch, kv_heads, heads // kv_heads, dim)  # the query heads of each KV head
    scores = torch.matmul(grouped, key.transpose(-1, -2))  # (B, Hkv, G, L)
    scores = scores.float() * (dim ** -0.5 if scaling is None else scaling)
    if attention_mask is not None:
        mask = attention_mask[:, :, :, : key.shape[-2]]  # (B, 1, 1, L): broadcast over heads
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    probs = torch.softmax(scores, dim=-1).to(value.dtype)
    out = torch.matmul(probs, value)  # (B, Hkv, G, D)
    return out.reshape(batch, 1, heads, dim), None


def register() -> None:
    """Make NAME a valid `_attn_implementation` (its masks are SDPA's)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, gqa_decode_attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)


def use_gqa_decode(model: Any) -> str:
    """Switch an SDPA model to NAME (others are left alone); returns the implementation in use."""
    config = model.config
    if getattr(config, "_attn_implementation", None) == "sdpa":
        register()
        config._attn_implementation = NAME
    return config._attn_implementation


@contextmanager
def gqa_decode(model: Any) -> Iterator[str]:
    """`use_gqa_decode` for the duration of a block (benchmarks compare both on one model)."""
    before = model.config._attn_implementation
    try:
        yield use_gqa_decode(model)
    finally:
        model.config._attn_implementation = before
