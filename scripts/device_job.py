"""The GPU half of shipping the adapter (run by scripts/device_run.sh on the H200, not in CI).

Converts the embedded GGUF (verified by sha256 before) to a bf16 safetensors folder, trains the
QLoRA adapter with `logwarden.train.train`, then generates answers for the recorded evaluation
prompts — sample_logs, the realdata held-out side, the generated validation split — with the
base model and with base + adapter through the real `LocalEngine` (nf4, batching, and each
prompt's OWN grammar: its recorded schema admits only the evidence ids its digest part shows),
and writes everything to --out. Scoring happens back on the CPU machine (scripts/device_score.py)
through the unchanged pipeline via `ReplayEngine`.

The same script runs on a CPU with a tiny random model for a dress rehearsal
(`--model-folder DIR --quant fp32 --decoder eager`, tests/train/test_device_job.py), so the one
H200 session cannot fail on a bug.
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
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from logwarden.engine.embedded import _drop_gguf_quantizer

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


def read_jsonl(path: Path) -> list[dict]:
    """Rows of a .jsonl or .jsonl.gz file."""
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


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
                      alpha=2 * args.rank, batch=args.batch, max_steps=args.max_steps, max_len=args.max_len,
                      quant=args.quant)
    every = lambda step, total, loss: step % 25 == 0 and print(f"step {step}/{total} loss {loss:.4f}", flush=True)
    card = run_training(cfg, every)
    card["base"]["base"] = "embedded"
    (out / "training.json").write_text(json.dumps(card, indent=2, default=str))
    print("train metrics", json.dumps(card["metrics"]), flush=True)
    return card


def prompt_sets(data: Path, work: Path, val_limit: int) -> dict[str, list[dict]]:
    """{set name: [{"system", "user", "schema"}]}: every recorded prompts_<set> file, and the generated validation prompts."""
    sets = {}
    for path in sorted(data.glob("prompts_*.jsonl*")):
        sets[path.name.split(".")[0].removeprefix("prompts_")] = read_jsonl(path)
    val_file = unpack(data, work) / "val.jsonl"
    if not val_file.is_file():  # prompts recorded alone (device_prepare --prompts-only): no dataset travelled
        return sets
    val = read_jsonl(val_file)[:val_limit]
    sets["val"] = [{"system": v["system"], "user": v["user"], "schema": v["meta"].get("schema")} for v in val]
    return sets


def generate(folder: Path, adapter: Path | None, sets: dict[str, list[dict]], out: Path, args) -> dict:
    from logwarden.engine.api import Request
    from logwarden.engine.load import load_engine
    from logwarden.schemas import assessment_json_schema

    engine = load_engine(model=str(folder), adapter=str(adapter) if adapter else None, quant=args.quant,
                         max_batch=args.max_batch, cache_kind="dynamic" if args.decoder == "eager" else "static",
                         decoder=args.decoder)
    engine.token_budget = 10**9  # an H200 holds 128 rows of 0.5B KV easily; fewer, fuller batches
    report, t_all = {}, time.time()
    with out.open("w") as fh:
        for name, rows in sets.items():
            t = time.time()
            requests = [Request(p["system"], p["user"], schema=p.get("schema")) for p in rows]
            gens = engine.generate(requests, schema=assessment_json_schema(), max_new_tokens=args.max_new_tokens)
            wall = time.time() - t
            for p, g in zip(rows, gens):
                fh.write(json.dumps({"set": name, "user": p["user"], "text": g.text, "finished": g.finished,
                                     "error": g.error, "stats": g.stats.as_dict()}, ensure_ascii=False) + "\n")
            new = sum(g.stats.new_tokens for g in gens)
            report[name] = {"prompts": len(rows), "wall_s": round(wall, 1), "new_tokens": new,
                            "tokens_per_s": round(new / wall, 1) if wall else 0.0,
                            "unfinished": sum(not g.finished for g in gens)}
            print(name, json.dumps(report[name]), flush=True)
    return {"sets": report, "wall_s": round(time.time() - t_all, 1), "engine": engine.describe()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", type=Path, default=None, help="The embedded GGUF (converted once to --work/hf).")
    ap.add_argument("--model-folder", type=Path, default=None, help="A transformers folder instead of --gguf.")
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
    ap.add_argument("--quant", default="nf4", help="nf4 on the H200 (QLoRA); fp32 for the CPU rehearsal")
    ap.add_argument("--max-new-tokens", type=int, default=320, help="RunOptions.max_new_tokens: as the pipeline")
    ap.add_argument("--val-prompts", type=int, default=10**9, help="Generated validation prompts to answer.")
    ap.add_argument("--adapter", type=Path, default=None,
                    help="Adapter for the generate stage (default: the one the train stage wrote to --work).")
    ap.add_argument("--configs", default="base,adapter", help="Which models answer: base, adapter or both.")
    ap.add_argument("--tag", default="", help="appended to each answers file's name (answers_base-1.5b.jsonl: another model)")
    ap.add_argument("--decoder", default="graphs", choices=("graphs", "eager"),
                    help="graphs = the CUDA default (static cache, replayed steps); eager = dynamic cache")
    args = ap.parse_args()
    if (args.gguf is None) == (args.model_folder is None):
        sys.exit("give exactly one of --gguf and --model-folder")
    folder, adapter = args.model_folder or args.work / "hf", args.adapter or args.work / "adapter"
    args.out.mkdir(parents=True, exist_ok=True)
    if args.gguf is not None:
        convert(args.gguf, folder)
    if args.stage in ("train", "all"):
        train(folder, unpack(args.data, args.work), adapter, args)
        shutil.copytree(adapter, args.out / "adapter", dirs_exist_ok=True, ignore=shutil.ignore_patterns("README.md"))
    if args.stage in ("generate", "all"):
        sets = prompt_sets(args.data, args.work, args.val_prompts)
        report = {}
        for name, ad in (("base", None), ("adapter", adapter)):
            if name in args.configs.split(","):
                report[name] = generate(folder, ad, sets, args.out / f"answers_{name}{args.tag}.jsonl", args)
        (args.out / f"generation{args.tag}.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    sys.exit(main())
