"""A Triton GEMV for bitsandbytes NF4 weights: decode (1..4 rows) without bitsandbytes' matmul.

Owns: the bitsandbytes NF4 layout in plain torch (`dequantize_reference`), the Triton kernel that
computes y = x @ W^T straight from the packed bytes, its registration as the custom op
`logwarden::nf4_gemv` (traceable by torch.compile and capturable in CUDA graphs), and
`enable_nf4_gemv`, which switches a model's `bnb.nn.Linear4bit` layers to it for few-row inputs.
Larger inputs (prefill, big batches), autograd and CPU keep bitsandbytes' own path.
Does not know: models, generation, the engine.

Layout (bitsandbytes 0.50, checked against `bitsandbytes.functional.dequantize_4bit` on CPU): the
row-major (out, in) matrix is flattened and packed two 4-bit codes per byte, the FIRST value in the
HIGH nibble; value i is NF4[code] * absmax[i // blocksize]. With double quantization
(`compress_statistics=True`) absmax is uint8: absmax[b] = state2.code[q[b]] *
state2.absmax[b // state2.blocksize] + offset. The kernel does that second dequantization itself
(one byte per 64 weights), so switching a layer costs no extra memory: the buffers it registers
alias the layer's own tensors.
"""

from __future__ import annotations

import logging
import os
import types
from math import prod
from typing import Any

import torch

log = logging.getLogger(__name__)

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs: the module still imports, available() says no
    triton = None
if not hasattr(torch.library, "triton_op"):  # torch < 2.6 cannot trace the op
    triton = None

# bitsandbytes' NF4 code book (normal-float quantiles), index = 4-bit code.
NF4 = (-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
       -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
       0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
       0.7229568362236023, 1.0)
BLOCKSIZE = 64  # the only NF4 blocksize the kernel handles (bitsandbytes' default)
_DEVICES = ("cuda",)  # where layers are switched (tests add "cpu" to run the Triton interpreter)
SELF_CHECK_RTOL = 2e-2  # relative L2 error vs bitsandbytes; bf16 outputs alone differ by ~4e-3


def available() -> bool:
    """True when Triton is importable (the kernel runs on CUDA, or on CPU under TRITON_INTERPRET=1)."""
    return triton is not None


def block_absmax(quant_state: Any) -> torch.Tensor:
    """float32 absmax per block of `blocksize` values, undoing double quantization if present."""
    if not quant_state.nested:
        return quant_state.absmax.float()
    state2 = quant_state.state2
    scale2 = state2.absmax.float().repeat_interleave(state2.blocksize)[: quant_state.absmax.numel()]
    return state2.code.float()[quant_state.absmax.long()] * scale2 + quant_state.offset


def dequantize_reference(weight: torch.Tensor, quant_state: Any) -> torch.Tensor:
    """The NF4 matrix `weight` (packed bytes of a Params4bit) stands for, in quant_state.dtype; pure
    torch, the same arithmetic as bitsandbytes (fp32 code * fp32 absmax, then cast)."""
    packed = weight.contiguous().view(torch.uint8).reshape(-1)
    codes = torch.stack((packed >> 4, packed & 0xF), dim=-1).reshape(-1).long()  # high nibble first
    n = prod(quant_state.shape)
    values = torch.tensor(NF4, device=packed.device)[codes][:n]
    absmax = block_absmax(quant_state).repeat_interleave(quant_state.blocksize)[:n]
    return (values * absmax).reshape(quant_state.shape).to(quant_state.dtype)


if triton is not None:
    # BLOCK_N output rows per program, BLOCKS_K quantization blocks (64 values = 8 int32 words) per
    # loop step. Every config gives a thread 32 packed bytes per step: 16 cost ~30% more instructions
    # per byte, 64 need ~220 registers (low occupancy) -- sm_90 SASS counts, Triton 3.6. BLOCKS_K 32
    # puts more warps on the 3584-row matrices, BLOCK_N 4 with 1 warp keeps 128 programs for the
    # 512-row k/v projections.
    _CONFIGS = [triton.Config({"BLOCK_N": n, "BLOCKS_K": k}, num_warps=w)
                for n, k, w in ((4, 8, 1), (8, 8, 2), (16, 8, 4), (4, 32, 4), (8, 32, 8), (16, 16, 8))]
    if os.environ.get("TRITON_INTERPRET") == "1":  # nothing to benchmark on the CPU interpreter
        _CONFIGS = [triton.Config({"BLOCK_N": 16, "BLOCKS_K": 4}, num_warps=4)]

    # Autotuned once per weight shape (cached on disk); the K width is a constexpr, so each shape
    # compiles its own kernel anyway.
    @triton.autotune(configs=_CONFIGS, key=["N", "BLOCKS"], cache_results=True)
    @triton.jit
    def _nf4_gemv_kernel(x_ptr, w_ptr, absmax_ptr, absmax2_ptr, code2_ptr, offset_ptr, code_ptr, y_ptr,
                         M, N, stride_xm, stride_ym,
                         BLOCKS: tl.constexpr, M_BLOCK: tl.constexpr, NESTED: tl.constexpr, BLOCK2: tl.constexpr,
                         BLOCK_N: tl.constexpr, BLOCKS_K: tl.constexpr):
        """y[m, n] = sum_k x[m, k] * W[n, k] for m < M <= M_BLOCK, k < 64 * BLOCKS; one program =
        BLOCK_N rows of W, whose tile is read once for all x rows. fp32 accumulation."""
        rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)  # output rows of this program
        rb = tl.arange(0, BLOCKS_K)  # quantization blocks within one K step
        rw = tl.arange(0, 8)  # int32 word within a block
        rk = tl.arange(0, 64)  # value within a block
        rm = tl.arange(0, M_BLOCK)
        # bit offset of value j in its word: bytes are little-endian, and bitsandbytes puts the first
        # of a byte's two values in the high nibble -> 4, 0, 12, 8, 20, 16, 28, 24
        shift = (rw // 2) * 8 + (1 - rw % 2) * 4
        n_mask = rn < N
        if NESTED:
            offset = tl.load(offset_ptr)
        acc = tl.zeros([M_BLOCK, BLOCK_N], dtype=tl.float32)
        for b0 in range(0, BLOCKS, BLOCKS_K):
            b = b0 + rb
            b_mask = b < BLOCKS
            nb_mask = n_mask[:, None] & b_mask[None, :]
            # packed weights, contiguous along K (16-byte loads); read once, so keep them out of L2
            words = tl.load(w_ptr + rn[:, None, None] * (BLOCKS * 8) + b[None, :, None] * 8 + rw[None, None, :],
                            mask=nb_mask[:, :, None], other=0, eviction_policy="evict_first")
            codes = tl.reshape((words[:, :, :, None] >> shift) & 0xF, [BLOCK_N, BLOCKS_K, 64])
            # the code book is 16 floats, one cache line: the lookup is an L1 hit
            w = tl.load(code_ptr + codes, eviction_policy="evict_last")
            # one scale per (row, block), applied to the block's 64-term sum; masked blocks meet
            # x = 0, so their (finite) scale needs no mask of its own
            blk = rn[:, None] * BLOCKS + b[None, :]
            if NESTED:
                q = tl.load(absmax_ptr + blk, mask=nb_mask, other=0)
                scale = (tl.load(code2_ptr + q, eviction_policy="evict_last")
                         * tl.load(absmax2_ptr + blk // BLOCK2, mask=nb_mask, other=0.0) + offset)
            else:
                scale = tl.load(absmax_ptr + blk, mask=nb_mask, other=0.0)
            for m in tl.static_range(M_BLOCK):
                row = tl.minimum(M - 1, m)  # padding rows (M <= m) repeat row M-1 and are not stored
                x = tl.load(x_ptr + row * stride_xm + b[:, None] * 64 + rk[None, :],
                            mask=b_mask[:, None], other=0.0).to(tl.float32)
                part = tl.sum(tl.sum(w * x[None, :, :], axis=2) * scale, axis=1)  # [BLOCK_N]
                acc += tl.where(rm[:, None] == m, part[None, :], 0.0)
        y_off = rm[:, None] * stride_ym + rn[None, :]
        tl.store(y_ptr + y_off, acc.to(y_ptr.dtype.element_ty), mask=(rm[:, None] < M) & n_mask[None, :])

    @torch.library.triton_op("logwarden::nf4_gemv", mutates_args=())
    def nf4_gemv(x: torch.Tensor, packed: torch.Tensor, absmax: torch.Tensor, code: torch.Tensor,
                 out_features: int, absmax2: torch.Tensor | None = None, code2: torch.Tensor | None = None,
                 offset: torch.Tensor | None = None, blocksize2: int = 256) -> torch.Tensor:
        """x (M, K) @ W^T -> (M, out_features) in x.dtype, K a multiple of 64. `packed`: the NF4
        bytes, flat (uint8 or their int32 view); `code`: the 16 NF4 floats (float32); `absmax`:
        float32, or uint8 with `absmax2`, `code2` and `offset` (one float32 element, a tensor so
        that compiled graphs do not bake it in) for double quantization, `blocksize2` blocks per
        absmax2 value."""
        if x.stride(-1) != 1:
            x = x.contiguous()
        M, K = x.shape
        y = torch.empty((M, out_features), dtype=x.dtype, device=x.device)
        if M == 0:  # the kernel reads row M-1
            return y
        nested = absmax2 is not None
        grid = lambda meta: (triton.cdiv(out_features, meta["BLOCK_N"]),)  # noqa: E731
        # int(M): under torch.compile with dynamic shapes each row count gets its own kernel
        torch.library.wrap_triton(_nf4_gemv_kernel)[grid](
            x, packed.view(torch.int32), absmax, absmax2 if nested else absmax, code2 if nested else code,
            offset if nested else code, code, y, M, out_features, x.stride(0), y.stride(0),
            BLOCKS=K // 64, M_BLOCK=triton.next_power_of_2(int(M)), NESTED=nested, BLOCK2=blocksize2 if nested else 1)
        return y


def _gemv_args(layer: Any) -> tuple:
    """The op's arguments after x for a Linear4bit: its own tensors (aliases, no copies)."""
    return (layer._nf4_packed, layer._nf4_absmax, layer._nf4_code, layer.out_features, layer._nf4_absmax2,
            layer._nf4_code2, layer._nf4_offset, layer._nf4_blocksize2)


def _gemv_forward(self: Any, x: torch.Tensor) -> torch.Tensor:
    """Linear4bit.forward with the Triton path for few rows; anything else is bitsandbytes' call."""
    if x.numel() > self._nf4_max_rows * self.in_features or (x.requires_grad and torch.is_grad_enabled()):
        return self._nf4_original_forward(x)  # prefill/batches: bnb's dequant + matmul; no backward here
    y = torch.ops.logwarden.nf4_gemv(x.reshape(-1, self.in_features), *_gemv_args(self))
    y = y.reshape(*x.shape[:-1], self.out_features)
    return y if self.bias is None else y + self.bias.to(y.dtype)


def _eligible(layer: Any) -> bool:
    weight = layer.weight
    state = getattr(weight, "quant_state", None)
    return (state is not None and weight.device.type in _DEVICES and state.quant_type == "nf4"
            and state.blocksize == BLOCKSIZE and layer.in_features % BLOCKSIZE == 0
            and tuple(state.shape) == (layer.out_features, layer.in_features)
            and not getattr(state, "packing_format_for_cpu", False))  # bnb's CPU repacking: another layout


def _attach(layer: Any, max_rows: int) -> None:
    """Non-persistent buffers (not in state_dict; static addresses for CUDA graphs) aliasing the
    layer's packed weight and quantization state. Install after the model reached its device."""
    state, device = layer.weight.quant_state, layer.weight.device
    nested = bool(state.nested)

    def on_device(t: torch.Tensor) -> torch.Tensor:  # a no-op, except for an offset loaded to the CPU
        return t.to(device=device, dtype=t.dtype if t.dtype == torch.uint8 else torch.float32)

    packed = layer.weight.data.view(torch.uint8).reshape(-1).view(torch.int32)  # the kernel reads words
    layer.register_buffer("_nf4_packed", packed, persistent=False)
    layer.register_buffer("_nf4_absmax", on_device(state.absmax), persistent=False)
    layer.register_buffer("_nf4_code", torch.tensor(NF4, device=device), persistent=False)
    layer.register_buffer("_nf4_absmax2", on_device(state.state2.absmax) if nested else None, persistent=False)
    layer.register_buffer("_nf4_code2", on_device(state.state2.code) if nested else None, persistent=False)
    offset = on_device(torch.as_tensor(state.offset)).reshape(1) if nested else None
    layer.register_buffer("_nf4_offset", offset, persistent=False)
    layer._nf4_blocksize2 = int(state.state2.blocksize) if nested else 256
    layer._nf4_max_rows = max_rows


def _detach(layer: Any) -> None:
    for name in [n for n in layer._buffers if n.startswith("_nf4_")]:
        del layer._buffers[name]
    del layer._nf4_original_forward


def _self_check(layer: Any, rows: int) -> float:
    """Relative L2 error of the kernel vs the layer's original forward on a random bf16 input."""
    gen = torch.Generator(device=layer.weight.device).manual_seed(0)
    x = torch.randn(rows, layer.in_features, device=layer.weight.device, dtype=torch.bfloat16, generator=gen)
    with torch.no_grad():
        ref = layer._nf4_original_forward(x).float()
        out = torch.ops.logwarden.nf4_gemv(x, *_gemv_args(layer)).float()
        if layer.bias is not None:
            out = out + layer.bias.float()
    return ((out - ref).norm() / ref.norm().clamp(min=1e-12)).item()


def enable_nf4_gemv(model: torch.nn.Module, *, max_rows: int = 4) -> int:
    """Switch every CUDA NF4 `bnb.nn.Linear4bit` in `model` (peft LoRA wrappers included: the
    Linear4bit inside is patched) to the Triton kernel for inputs of at most `max_rows` rows.
    Returns how many layers were switched; 0 without Triton, CUDA or bitsandbytes, or when the
    self-check (one layer per weight shape, 1 and max_rows rows, vs bitsandbytes) fails."""
    if not available():
        return 0
    try:
        from bitsandbytes.nn import Linear4bit
    except ImportError:
        return 0
    layers = [m for m in model.modules()
              if isinstance(m, Linear4bit) and not hasattr(m, "_nf4_original_forward") and _eligible(m)]
    if not layers:
        return 0
    for layer in layers:
        _attach(layer, max_rows)
        layer._nf4_original_forward = layer.forward
    # one layer per shape: also runs the autotuner for each shape now, not inside a CUDA graph capture
    by_shape = {(m.out_features, m.in_features): m for m in reversed(layers)}
    try:
        worst = max(_self_check(m, rows) for m in by_shape.values() for rows in {1, max_rows})
        why = f"relative error {worst:.3g} vs bitsandbytes, tolerance {SELF_CHECK_RTOL}"
    except Exception as exc:  # a Triton compile/launch failure must not take the engine down
        worst, why = float("nan"), f"the self-check failed to run: {exc!r}"
    if not worst <= SELF_CHECK_RTOL:  # also catches NaN
        log.warning("NF4 Triton GEMV not enabled (%s)", why)
        for layer in layers:
            _detach(layer)
        return 0
    for layer in layers:
        layer.forward = types.MethodType(_gemv_forward, layer)
    log.info("NF4 Triton GEMV on %d Linear4bit layers (<= %d rows; max self-check error %.2g)",
             len(layers), max_rows, worst)
    return len(layers)
