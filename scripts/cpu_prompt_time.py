"""Time per prompt on this CPU, per model, on the same recorded prompts (issue 38 item 3).

The prompts are those `device_prepare.py` recorded (what the pipeline sends, each with its own
schema); a seeded sample of `--n` of them is answered by each `--models` entry through the engine
`analyze` opens (llama.cpp, default quantisation, the settings' threads and batch), the models
taking turns on the same prompts so that a busy machine weighs on both alike. Prints, per model:
seconds per prompt, prompt and new tokens, answers finished and valid, and the verdicts given;
writes the answers to `--out` (answers_<model>.jsonl, the shape `device_score.py` reads).

    PYTHONPATH=. python scripts/cpu_prompt_time.py --prompts .mdl/data/prompts_heldout.jsonl.gz --n 12
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import time
from collections import Counter
from pathlib import Path

from logwarden.app.backends import EngineOptions, open_engine
from logwarden.app.config import get_settings
from logwarden.app.postprocess import AssessmentError, parse_assessment
from logwarden.engine.api import Request


def sample(path: Path, n: int, seed: int) -> list[dict]:
    rows = [json.loads(line) for line in gzip.decompress(path.read_bytes()).decode().splitlines() if line.strip()]
    return random.Random(seed).sample(rows, min(n, len(rows)))


def answer(model: str, rows: list[dict], max_new_tokens: int) -> dict:
    engine = open_engine(EngineOptions.from_settings(get_settings(), model=model))
    try:
        requests = [Request(r["system"], r["user"], schema=r.get("schema")) for r in rows]
        start = time.perf_counter()
        gens = engine.generate(requests, max_new_tokens=max_new_tokens)
        wall = time.perf_counter() - start
    finally:
        engine.close()
    verdicts: Counter = Counter()
    valid = 0
    for g in gens:
        try:
            parsed = parse_assessment(g.text)
        except AssessmentError:
            continue
        valid += 1
        verdicts.update(v.verdict for v in parsed.verdicts)
    return {"model": model, "prompts": len(rows), "wall_s": round(wall, 1), "s_per_prompt": round(wall / len(rows), 2),
            "prompt_tokens": sum(g.stats.prompt_tokens for g in gens), "new_tokens": sum(g.stats.new_tokens for g in gens),
            "finished": sum(g.finished for g in gens), "valid": valid, "verdicts": dict(verdicts),
            "answers": [{"user": r["user"], "text": g.text, "finished": g.finished, "error": g.error}
                        for r, g in zip(rows, gens)]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", type=Path, default=Path(".mdl/data/prompts_heldout.jsonl.gz"))
    ap.add_argument("--n", type=int, default=12)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--models", default="embedded,embedded-1.5b")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="default: the settings' (as analyze)")
    ap.add_argument("--out", type=Path, default=Path(".mdl/cpu_time"))
    args = ap.parse_args()
    rows = sample(args.prompts, args.n, args.seed)
    budget = args.max_new_tokens or get_settings().max_new_tokens
    args.out.mkdir(parents=True, exist_ok=True)
    for model in args.models.split(","):
        report = answer(model, rows, budget)
        with (args.out / f"answers_{model}.jsonl").open("w", encoding="utf-8") as fh:
            for row in report.pop("answers"):
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
