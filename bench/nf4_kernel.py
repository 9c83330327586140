"""Micro-benchmark: bitsandbytes' NF4 Linear4bit forward against logwarden's Triton GEMV, one row.

The 7B Qwen2.5 linear shapes (hidden 3584, intermediate 18944), NF4 with double quantization and
bf16 compute (the QLoRA recipe the engine loads), random weights. Per shape, in the same run:
- graph us: GPU time per call from a CUDA graph of many calls (what a CUDA-graphed decode sees);
- eager us: per call from a plain Python loop (launch and Python overhead included);
- GB/s: bytes the call must read (packed weights, absmax, absmax2, x) / graph time;
- the Triton config the autotuner chose, and the error vs bitsandbytes and vs an exact fp32 product.
Weights are cycled over enough copies of each layer (>= --l2-spill MB) that they come from HBM,
not from the 50 MB L2. Needs only torch, triton and bitsandbytes on a CUDA machine:

    python bench/nf4_kernel.py --out bench/out/nf4_kernel.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
DEVICE = "cuda"
HIDDEN, INTERMEDIATE, LAYERS = 3584, 18944, 28
SHAPES = {  # name: (out_features N, in_features K, count per decoder layer)
    "q": (HIDDEN, HIDDEN, 1), "k": (512, HIDDEN, 1), "v": (512, HIDDEN, 1), "o": (HIDDEN, HIDDEN, 1),
    "gate": (INTERMEDIATE, HIDDEN, 1), "up": (INTERMEDIATE, HIDDEN, 1), "down": (HIDDEN, INTERMEDIATE, 1),
}


def load_kernel_module():
    """logwarden/engine/nf4_kernel.py by path: the package's other dependencies need not be installed."""
    spec = importlib.util.spec_from_file_location("nf4_kernel", ROOT / "logwarden" / "engine" / "nf4_kernel.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def make_layer(n: int, k: int, seed: int):
    import bitsandbytes as bnb

    torch.manual_seed(seed)
    layer = bnb.nn.Linear4bit(k, n, bias=False, compute_dtype=torch.bfloat16, quant_type="nf4",
                              compress_statistics=True, device=DEVICE)
    layer.weight.data = torch.randn(n, k, device=DEVICE, dtype=torch.bfloat16) * 0.02
    return layer.to(DEVICE)  # quantizes


def bytes_read(layer, k: int) -> int:
    state = layer.weight.quant_state
    return (layer.weight.data.numel() * layer.weight.data.element_size() + state.absmax.numel()
            * state.absmax.element_size() + state.state2.absmax.numel() * 4 + 2 * k)


def time_graph(calls, reps: int) -> float:
    """us per call: `calls` (one closure per weight copy) captured in one CUDA graph, replayed;
    NaN if the calls cannot be captured."""
    try:
        return _time_graph(calls, reps)
    except RuntimeError as exc:
        print(f"CUDA graph capture failed: {exc}", file=sys.stderr)
        return float("nan")


def _time_graph(calls, reps: int) -> float:
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for call in calls:  # warm-up outside capture (autotuning, allocator)
            call()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for call in calls:
            call()
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000 / (reps * len(calls))


def time_eager(calls, reps: int) -> float:
    for call in calls:
        call()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        for call in calls:
            call()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000 / (reps * len(calls))


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


def run_shape(nk, name: str, n: int, k: int, rows: int, args: argparse.Namespace) -> dict:
    one = make_layer(n, k, seed=0)
    size = bytes_read(one, k)
    copies = max(1, math.ceil(args.l2_spill * 2**20 / size))
    layers = [one] + [make_layer(n, k, seed=i) for i in range(1, copies)]
    for layer in layers:
        nk._attach(layer, rows)
    x = torch.randn(rows, k, device=DEVICE, dtype=torch.bfloat16)
    with torch.no_grad():
        bnb_out = one(x)
        out = torch.ops.logwarden.nf4_gemv(x, *nk._gemv_args(one))
        exact = x.float() @ nk.dequantize_reference(one.weight.data, one.weight.quant_state).float().T
        bnb_calls = [lambda layer=layer: layer(x) for layer in layers]
        tri_calls = [lambda layer=layer: torch.ops.logwarden.nf4_gemv(x, *nk._gemv_args(layer)) for layer in layers]
        result = {"shape": name, "N": n, "K": k, "rows": rows, "copies": copies, "bytes": size,
                  "bnb_graph_us": time_graph(bnb_calls, args.reps), "triton_graph_us": time_graph(tri_calls, args.reps),
                  "bnb_eager_us": time_eager(bnb_calls, args.reps), "triton_eager_us": time_eager(tri_calls, args.reps),
                  "max_abs_err_vs_bnb": (out.float() - bnb_out.float()).abs().max().item(),
                  "rel_err_vs_bnb": rel(out, bnb_out), "rel_err_vs_exact": rel(out, exact),
                  "bnb_rel_err_vs_exact": rel(bnb_out, exact)}
    key = [c for key, c in nk._nf4_gemv_kernel.cache.items() if key[:2] == (n, k // 64)]
    result["triton_config"] = str(key[0]) if key else "?"
    for arm in ("bnb", "triton"):
        result[f"{arm}_GBps"] = size / (result[f"{arm}_graph_us"] * 1e3)
    result["speedup_graph"] = result["bnb_graph_us"] / result["triton_graph_us"]
    del layers
    torch.cuda.empty_cache()
    return result


def markdown(results: list[dict], meta: dict) -> str:
    lines = [f"NF4 GEMV, {meta['device']}, torch {meta['torch']}, triton {meta['triton']}, "
             f"bitsandbytes {meta['bitsandbytes']}", "",
             "| shape | N x K | rows | bnb us (graph) | triton us (graph) | speedup | bnb GB/s | triton GB/s "
             "| bnb us (eager) | triton us (eager) | rel err vs bnb | max abs err vs bnb | triton config |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['shape']} | {r['N']}x{r['K']} | {r['rows']} | {r['bnb_graph_us']:.1f} | "
                     f"{r['triton_graph_us']:.1f} | {r['speedup_graph']:.2f}x | {r['bnb_GBps']:.0f} | "
                     f"{r['triton_GBps']:.0f} | {r['bnb_eager_us']:.1f} | {r['triton_eager_us']:.1f} | "
                     f"{r['rel_err_vs_bnb']:.2e} | {r['max_abs_err_vs_bnb']:.2e} | {r['triton_config']} |")
    for rows in sorted({r["rows"] for r in results}):
        per = [r for r in results if r["rows"] == rows]
        if {r["shape"] for r in per} == set(SHAPES):
            bnb_ms = sum(r["bnb_graph_us"] * SHAPES[r["shape"]][2] for r in per) * LAYERS / 1e3
            tri_ms = sum(r["triton_graph_us"] * SHAPES[r["shape"]][2] for r in per) * LAYERS / 1e3
            lines += ["", f"{rows} row(s): the {LAYERS} layers' linears of one 7B decode step take {bnb_ms:.2f} ms "
                          f"with bitsandbytes, {tri_ms:.2f} ms with the Triton kernel (CUDA-graph times)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shapes", default=",".join(SHAPES), help="comma list of " + ",".join(SHAPES))
    p.add_argument("--rows", default="1", help="comma list of input rows, e.g. 1,2,4")
    p.add_argument("--reps", type=int, default=50, help="graph replays / eager loops per measurement")
    p.add_argument("--l2-spill", type=float, default=256, help="MB of weight copies cycled per shape")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "nf4_kernel.json")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    import bitsandbytes
    import triton

    nk = load_kernel_module()
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "bitsandbytes": bitsandbytes.__version__}
    results = []
    for rows in (int(r) for r in args.rows.split(",")):
        for name in args.shapes.split(","):
            n, k, _ = SHAPES[name]
            results.append(run_shape(nk, name, n, k, rows, args))
            print(json.dumps(results[-1]), flush=True)
    text = markdown(results, meta)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    args.out.with_suffix(".md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
