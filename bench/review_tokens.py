#!/usr/bin/env python3
"""What the model is asked to read: prompt tokens per 1,000 log lines on realdata's held-out side, counted with the embedded GGUF's own tokenizer, no generation. In one run: this tree's
targeted review (`--llm-policy deviations`, the default) against this tree's broad policy
(`suspicious`, the old default: every window with a rule hit or an alarming word, its rare lines).

Runs against any logwarden tree (its policies, its pipeline), so the tree before this change is
measured with the same command:

    PYTHONPATH=. python -P bench/review_tokens.py [--policies suspicious,deviations] [--json out.json]
    git worktree add /tmp/before b84a1d1 && PYTHONPATH=/tmp/before python -P bench/review_tokens.py --policies suspicious
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def counter():
    from logwarden.app.config import get_settings
    from logwarden.engine.embedded import PACKS, ensure_gguf
    from logwarden.engine.gguf_meta import read_metadata
    from logwarden.engine.gguf_tokenizer import token_counter

    gguf = ensure_gguf(PACKS["embedded"], get_settings().model_cache)
    return token_counter(read_metadata(gguf)).count


def measure(units, labels_dir: Path, files, count, policy: str) -> dict:
    from logwarden.app.evaluate import run_eval
    from logwarden.train.replay import RecordingEngine

    engine = RecordingEngine(count)
    began = time.perf_counter()
    # window prompts only: incident stories are a job of their own (few hundred tokens each, budgeted apart)
    run = run_eval(units, labels_dir, files, engine=engine, llm_policy=policy, incidents=None)
    users = [count(r.user) for r in engine.requests.values()]
    lines = run.metrics["lines"]
    return {"policy": policy, "lines": lines, "prompts": len(users), "user_tokens": sum(users),
            "user_tokens_per_1000_lines": round(1000 * sum(users) / lines, 1) if lines else None,
            "windows_sent": run.metrics["windows_llm"], "seconds": round(time.perf_counter() - began, 1)}


def main() -> int:
    from logwarden.app.evaluate import filter_units, labelled_files, load_labels
    from logwarden.train.realdata import load_split, realdata_dir, side_of

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default="suspicious,deviations")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    count = counter()
    folder = realdata_dir()
    units = filter_units(load_labels(folder / "labels.jsonl"), side_of(load_split()), "heldout")
    files = labelled_files(units, folder)
    result = {"heldout": [measure(units, folder, files, count, p) for p in args.policies.split(",")]}
    for row in result["heldout"]:
        print(f"held-out, {row['policy']:<11} {row['prompts']:>6,} prompts {row['user_tokens']:>10,} prompt tokens "
              f"{row['user_tokens_per_1000_lines']:>8} per 1,000 lines ({row['lines']:,} lines, {row['seconds']} s)")
    if len(result["heldout"]) == 2 and result["heldout"][1]["user_tokens"]:
        ratio = result["heldout"][1]["user_tokens"] / result["heldout"][0]["user_tokens"]
        result["ratio"] = round(ratio, 2)
        print(f"{result['heldout'][1]['policy']} reads {ratio:.2f}x the prompt tokens of {result['heldout'][0]['policy']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
