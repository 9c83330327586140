"""The GPU half of shipping the adapter (run by scripts/device_run.sh on the H200, not in CI).

Converts the embedded GGUF (verified by sha256 before) to a bf16 safetensors folder, trains the
QLoRA adapter with `logwarden.train.train`, then generates answers for the recorded evaluation
prompts with the base model and with base + adapter through the real `LocalEngine` (nf4, the
JSON grammar, batching) and writes everything to --out. Scoring happens back on the CPU machine
(scripts/device_score.py) through the unchanged pipeline via `ReplayEngine`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import time
from pathlib import Path

EMBEDDED_SHA = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"


def convert(gguf: Path, folder: Path) -> None:
    from logwarden.engine.embedded import _drop_gguf_quantizer
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if (folder / "config.json").is_file():
        return
    t = time.time()
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16)
    _drop_gguf_quantizer(model)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    (folder / "logwarden_source.json").write_text(json.dumps({"sha256": EMBEDDED_SHA, "model": "embedded"}))
    print(f"converted in {time.time() - t:.1f}s", flush=True)


def unpack(data: Path, work: Path) -> Path:
    out = work / "data"
    out.mkdir(parents=True, exist_ok=True)
    for name in ("train.jsonl", "val.jsonl", "manifest.json"):
        src = data / (name + ".gz")
        if src.is_file():
            (out / name).write_bytes(gzip.decompress(src.read_bytes()))
        elif (data / name).is_file():
            shutil.copy(data / name, out / name)
    return out


def train(folder: Path, data: Path, out: Path, args) -> dict:
    from logwarden.train.train import TrainConfig, run_training

    cfg = TrainConfig(base=str(folder), data=data, out=out, epochs=args.epochs, lr=args.lr, rank=args.rank,
                      alpha=2 * args.rank, batch=args.batch, max_steps=args.max_steps, max_len=args.max_len, quant="nf4")
    every = lambda step, total, loss: step % 25 == 0 and print(f"step {step}/{total} loss {loss:.4f}", flush=True)
    card = run_training(cfg, every)
    card["base"]["base"] = "embedded"
    (out / "training.json").write_text(json.dumps(card, indent=2, default=str))
    print("train metrics", json.dumps(card["metrics"]), flush=True)
    return card


def generate(folder: Path, adapter: Path | None, prompts: list[dict], out: Path, max_batch: int,
             decoder: str = "graphs") -> dict:
    from logwarden.engine.api import Request
    from logwarden.engine.load import load_engine
    from logwarden.schemas import assessment_json_schema

    engine = load_engine(model=str(folder), adapter=str(adapter) if adapter else "none", quant="nf4", max_batch=max_batch,
                         cache_kind="dynamic" if decoder == "eager" else "static", decoder=decoder)
    engine.token_budget = 10**9  # an H200 holds 128 rows of 0.5B KV easily; fewer, fuller batches
    t = time.time()
    gens = engine.generate([Request(p["system"], p["user"]) for p in prompts], schema=assessment_json_schema(),
                           max_new_tokens=320)
    wall = time.time() - t
    with out.open("w") as fh:
        for p, g in zip(prompts, gens):
            fh.write(json.dumps({"user": p["user"], "text": g.text, "finished": g.finished, "error": g.error,
                                 "stats": g.stats.as_dict()}, ensure_ascii=False) + "\n")
    new = sum(g.stats.new_tokens for g in gens)
    return {"prompts": len(prompts), "wall_s": wall, "new_tokens": new, "tokens_per_s": new / wall,
            "unfinished": sum(not g.finished for g in gens), "engine": engine.describe()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--stage", choices=("train", "generate", "all"), default="all")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--rank", type=int, default=12)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--max-steps", type=int, default=None)
    ap.add_argument("--max-len", type=int, default=1024)
    ap.add_argument("--max-batch", type=int, default=64)
    ap.add_argument("--val-prompts", type=int, default=300)
    ap.add_argument("--adapter", type=Path, default=None,
                    help="Adapter for the generate stage (default: the one the train stage wrote to --work).")
    ap.add_argument("--configs", default="base,adapter", help="Which models answer: base, adapter or both.")
    ap.add_argument("--decoder", default="graphs", choices=("graphs", "eager"),
                    help="graphs = the CUDA default (static cache, replayed steps); eager = dynamic cache")
    args = ap.parse_args()
    folder, adapter = args.work / "hf", args.adapter or args.work / "adapter"
    convert(args.gguf, folder)
    if args.stage in ("train", "all"):
        train(folder, unpack(args.data, args.work), adapter, args)
        shutil.copytree(adapter, args.out / "adapter", dirs_exist_ok=True, ignore=shutil.ignore_patterns("README.md"))
    if args.stage in ("generate", "all"):
        rows = [json.loads(l) for l in (args.data / "prompts_suspicious.jsonl").read_text().splitlines() if l.strip()]
        val = [json.loads(l) for l in (unpack(args.data, args.work) / "val.jsonl").read_text().splitlines() if l.strip()]
        prompts = rows + [{"system": v["system"], "user": v["user"]} for v in val[: args.val_prompts]]
        report = {}
        for name, ad in (("base", None), ("adapter", adapter)):
            if name not in args.configs.split(","):
                continue
            report[name] = generate(folder, ad, prompts, args.out / f"answers_{name}.jsonl", args.max_batch, args.decoder)
            print(name, json.dumps(report[name]), flush=True)
        (args.out / "generation.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    sys.exit(main())
