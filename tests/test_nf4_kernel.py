"""The NF4 Triton GEMV (logwarden/engine/nf4_kernel.py): the pure-torch layout against
bitsandbytes' own dequantization on CPU, the no-op switch on CPU, the kernel itself under the Triton
interpreter (a subprocess: TRITON_INTERPRET must be set before triton is imported), its trace by
torch.compile, and on a GPU (marked `cuda`) the kernel against bitsandbytes' CUDA Linear4bit."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

bnb = pytest.importorskip("bitsandbytes")
import bitsandbytes.functional as F  # noqa: E402

from logwarden.engine import nf4_kernel as nk  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs triton")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def quantized(shape, *, nested, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    w = (torch.randn(shape, generator=gen) * 0.05).to(dtype)
    return F.quantize_4bit(w, quant_type="nf4", compress_statistics=nested, blocksize=64)


def test_nf4_code_book_is_bitsandbytes():
    assert torch.equal(torch.tensor(nk.NF4), F.get_4bit_type("nf4", device="cpu"))


@pytest.mark.parametrize("nested", [True, False])
@pytest.mark.parametrize("shape", [(64, 64), (192, 320), (130, 448), (7, 30)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dequantize_reference_equals_bitsandbytes(shape, nested, dtype):
    packed, state = quantized(shape, nested=nested, dtype=dtype, seed=shape[0])
    expected = F.dequantize_4bit(packed, state)
    got = nk.dequantize_reference(packed, state)
    assert got.dtype == expected.dtype == dtype and got.shape == expected.shape == shape
    assert torch.equal(got, expected)


def test_enable_is_a_noop_on_cpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(bnb.nn.Linear4bit(128, 64, quant_type="nf4", compute_dtype=torch.float32),
                                torch.nn.ReLU(),
                                bnb.nn.Linear4bit(64, 32, quant_type="nf4", compute_dtype=torch.float32)).to("cpu")
    x = torch.randn(3, 128)
    before = model(x)
    assert nk.enable_nf4_gemv(model) == 0
    assert torch.equal(model(x), before)
    assert all("forward" not in m.__dict__ and not any(n.startswith("_nf4") for n in m._buffers)
               for m in model.modules())


_INTERPRETED = textwrap.dedent("""
    import torch, bitsandbytes as bnb, bitsandbytes.functional as F
    from logwarden.engine import nf4_kernel as nk

    assert nk.available()
    code = torch.tensor(nk.NF4)
    # N not a multiple of the program's 16 rows, K not of its 4-block step: the masks are exercised
    for (n, k, nested) in [(48, 128, True), (130, 320, False), (64, 1088, True)]:
        w = torch.randn(n, k, generator=torch.Generator().manual_seed(n)) * 0.05
        packed, qs = F.quantize_4bit(w, quant_type="nf4", compress_statistics=nested, blocksize=64)
        ref_w = nk.dequantize_reference(packed, qs)
        extra = (qs.absmax, code, n, qs.state2.absmax, qs.state2.code, qs.offset.reshape(1), qs.state2.blocksize) \\
            if nested else (qs.absmax, code, n)
        for rows in (1, 2, 3, 4):
            for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 1e-2)):
                x = torch.randn(rows, k).to(dtype)
                y = torch.ops.logwarden.nf4_gemv(x, packed.view(-1), *extra)
                ref = x.float() @ ref_w.float().T
                err = ((y.float() - ref).norm() / ref.norm()).item()
                assert y.dtype == dtype and y.shape == (rows, n) and err < tol, (n, k, nested, rows, dtype, err)

    # the switch on a CPU model (the interpreter stands in for the GPU)
    nk._DEVICES = ("cuda", "cpu")
    torch.manual_seed(0)
    model = torch.nn.Sequential(bnb.nn.Linear4bit(256, 128, bias=True, quant_type="nf4", compute_dtype=torch.float32),
                                bnb.nn.Linear4bit(128, 64, bias=False, quant_type="nf4", compute_dtype=torch.float32,
                                                  compress_statistics=False)).to("cpu")
    model[0].bias.data.normal_()
    x = torch.randn(2, 1, 256)
    with torch.no_grad():
        before = model(x)
        big = torch.randn(5, 256)
        before_big = model(big)
        assert nk.enable_nf4_gemv(model, max_rows=4) == 2
        assert nk.enable_nf4_gemv(model, max_rows=4) == 0  # already switched
        after = model(x)
        err = ((after - before).norm() / before.norm()).item()
        assert after.shape == before.shape and err < 1e-5, err
        calls = []
        model[0]._nf4_original_forward = lambda t, f=model[0]._nf4_original_forward: calls.append(t) or f(t)
        assert torch.equal(model(big), before_big) and len(calls) == 1  # 5 rows > max_rows: bitsandbytes
        model(x)
        assert len(calls) == 1

    # a peft LoRA wrapper: the Linear4bit inside it is switched, the adapter still adds its part
    import peft

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = bnb.nn.Linear4bit(256, 128, bias=False, quant_type="nf4", compute_dtype=torch.float32)

        def forward(self, x):
            return self.q_proj(x)

    lora = peft.get_peft_model(Tiny().to("cpu"), peft.LoraConfig(r=4, target_modules=["q_proj"],
                                                                  init_lora_weights=False))
    x = torch.randn(1, 256)
    with torch.no_grad():
        before = lora(x)
        assert nk.enable_nf4_gemv(lora) == 1
        after = lora(x)
    assert "forward" in lora.base_model.model.q_proj.base_layer.__dict__
    assert ((after - before).norm() / before.norm()).item() < 1e-5
    print("OK")
""")


@needs_triton
def test_kernel_under_the_triton_interpreter():
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "-c", _INTERPRETED], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0 and run.stdout.strip().endswith("OK"), run.stdout[-3000:] + run.stderr[-3000:]


@needs_triton
def test_op_is_one_node_in_a_torch_compile_graph():
    if not nk.available() or os.environ.get("TRITON_INTERPRET") == "1":
        pytest.skip("the op is traced only with the compiled (not interpreted) Triton kernel")
    packed, qs = quantized((64, 256), nested=True)
    args = (packed.view(-1), qs.absmax, torch.tensor(nk.NF4), 64, qs.state2.absmax, qs.state2.code,
            qs.offset.reshape(1), qs.state2.blocksize)
    graphs = []

    def capture(gm, example_inputs):  # trace only: the kernel itself cannot run on CPU here
        graphs.append(gm)
        return lambda *inputs: (torch.zeros(1, 64),)

    compiled = torch.compile(lambda x: torch.ops.logwarden.nf4_gemv(x, *args) * 2, backend=capture, fullgraph=True)
    compiled(torch.randn(1, 256))
    calls = [n for n in graphs[0].graph.nodes if n.op == "call_function" and "nf4_gemv" in str(n.target)]
    assert len(graphs) == 1 and len(calls) == 1


# ---- on a GPU --------------------------------------------------------------------------------

def cuda_linear(n, k, *, nested, bias, seed=0):
    torch.manual_seed(seed)
    layer = bnb.nn.Linear4bit(k, n, bias=bias, quant_type="nf4", compute_dtype=torch.bfloat16,
                              compress_statistics=nested)
    layer.weight.data = (torch.randn(n, k) * 0.02).to(layer.weight.data.dtype)  # before quantization
    if bias:
        layer.bias.data.normal_()
    return layer.to("cuda")


@pytest.mark.cuda
@needs_cuda
@needs_triton
@pytest.mark.parametrize("nested", [True, False])
@pytest.mark.parametrize("n,k", [(512, 3584), (3584, 3584), (1000, 640)])
def test_cuda_kernel_matches_bitsandbytes(n, k, nested):
    layer = cuda_linear(n, k, nested=nested, bias=False)
    ref_w = nk.dequantize_reference(layer.weight.data, layer.weight.quant_state).float()
    nk._attach(layer, 4)
    for rows in (1, 2, 3, 4):
        x = torch.randn(rows, k, device="cuda", dtype=torch.bfloat16)
        with torch.no_grad():
            bnb_out = layer(x).float()
            out = torch.ops.logwarden.nf4_gemv(x, *nk._gemv_args(layer))
        exact = x.float() @ ref_w.T
        assert out.dtype == torch.bfloat16 and out.shape == (rows, n)
        assert ((out.float() - exact).norm() / exact.norm()).item() < 5e-3  # bf16 output rounding
        assert ((out.float() - bnb_out).norm() / bnb_out.norm()).item() < 2e-2


@pytest.mark.cuda
@needs_cuda
@needs_triton
def test_cuda_enable_switches_decode_and_keeps_prefill_on_bitsandbytes():
    model = torch.nn.Sequential(cuda_linear(256, 512, nested=True, bias=True),
                                cuda_linear(512, 256, nested=False, bias=False, seed=1))
    decode = torch.randn(1, 1, 512, device="cuda", dtype=torch.bfloat16)
    prefill = torch.randn(1, 9, 512, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        ref_decode, ref_prefill = model(decode).float(), model(prefill)
        assert nk.enable_nf4_gemv(model) == 2
        out = model(decode).float()
        assert ((out - ref_decode).norm() / ref_decode.norm()).item() < 2e-2
        assert torch.equal(model(prefill), ref_prefill)
        graphed = torch.compile(model, mode="reduce-overhead", fullgraph=True)
        for _ in range(3):  # warm-up, capture, replay
            again = graphed(decode).float()
        assert torch.allclose(again, out, rtol=1e-2, atol=1e-2)


@pytest.mark.cuda
@needs_cuda
@needs_triton
def test_cuda_enable_patches_the_linear4bit_inside_a_peft_lora_wrapper():
    peft = pytest.importorskip("peft")

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = cuda_linear(128, 256, nested=True, bias=False)

        def forward(self, x):
            return self.q_proj(x)

    model = peft.get_peft_model(Tiny(), peft.LoraConfig(r=4, target_modules=["q_proj"]))
    x = torch.randn(1, 256, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        ref = model(x).float()
        assert nk.enable_nf4_gemv(model) == 1
        out = model(x).float()
    base = model.base_model.model.q_proj.base_layer
    assert "forward" in base.__dict__
    assert ((out - ref).norm() / ref.norm()).item() < 2e-2
