#!/usr/bin/env python3
"""Write the training generator's held-out windows as log files + labels.jsonl, so `logwarden eval`
scores them exactly like sample_logs (same pipeline, same scoring).

Keys "<seed>/val/<i>" are the validation split of `logwarden dataset build --seed <seed>`: never
trained on. One file per window; one label unit per file covering all its lines; attacks must be
found at ≥ medium (or the scenario's own risk if lower), benign windows must stay ≤ low.

Usage: python scripts/heldout_logs.py --out /tmp/heldout [--seed 7] [--n 40]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from logwarden.schemas import risk_rank
from logwarden.train.scenarios import draw


def write(out: Path, *, seed: int, n: int) -> int:
    out.mkdir(parents=True, exist_ok=True)
    units = []
    for i in range(n):
        scenario = draw(random.Random(f"{seed}/val/{i}"))  # the same draw as dataset.example_at
        name = f"{i:03d}_{Path(scenario.path).name}"
        (out / name).write_text("\n".join(scenario.lines) + "\n", encoding="utf-8")
        benign = scenario.category == "benign"
        risk_min = "info" if benign else min(scenario.risk, "medium", key=risk_rank)
        units.append({"file": name, "line_start": 1, "line_end": len(scenario.lines), "category": scenario.category,
                      "risk_min": risk_min, "risk_max": "low" if benign else None, "note": scenario.name})
    (out / "labels.jsonl").write_text("".join(json.dumps(u) + "\n" for u in units), encoding="utf-8")
    return len(units)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--n", type=int, default=40)
    args = parser.parse_args()
    print(f"{write(args.out, seed=args.seed, n=args.n)} held-out windows written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
