"""Cold `logwarden triage`: N fresh processes of this tree against a baseline tree, alternated.

Each run is `python -m logwarden.cli.main triage LINE --no-store --json` (add `--store` for the
store written too) in a new process, with `PYTHONPATH` set to the tree under test, so its code and
only its code is imported; the model cache is the settings' (already assembled). Runs alternate
A B A B … so drift of this shared machine lands on both; the result is the median of the per-pair
ratios (wall, TTFT and start-up — the wall less the answer's generation, which no start-up work
changes —, this tree ÷ baseline), with each side's median beside it. Every run's
answer (records, verdict, the model's parsed answer) must equal the first one's, or it stops.

    python bench/triage_cold.py [--runs 5] [--baseline REF]   # REF: a commit (default: main at the merge, 902bf40)

The baseline tree is a detached `git worktree` of REF under /tmp (made once, reused).
`--baseline-env` instead runs this tree with LOGWARDEN_NO_START_CACHES=1 (the header cache off).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TREE = Path(__file__).resolve().parent.parent
LINE = "sshd[2211]: Failed password for root from 203.0.113.50 port 51022 ssh2"
BASE = "902bf40"


def baseline_tree(ref: str) -> Path:
    target = Path("/tmp") / f"logwarden-bench-{ref[:12]}"
    if not (target / "logwarden").is_dir():
        subprocess.run(["git", "-C", str(TREE), "worktree", "add", "--detach", str(target), ref], check=True,
                       capture_output=True)
    return target


def one_run(tree: Path, *, store: bool, extra_env: dict[str, str]) -> tuple[float, float, float, dict]:
    """Wall, TTFT, start-up (wall less the answer's own generation time) and the report."""
    args = [sys.executable, "-m", "logwarden.cli.main", "triage", LINE, "--json"] + ([] if store else ["--no-store"])
    env = {**os.environ, "PYTHONPATH": str(tree), **extra_env}
    began = time.perf_counter()
    done = subprocess.run(args, cwd=tree, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{tree}: exit {done.returncode}\n{done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    stats = report.pop("stats") or {}
    for record in report["records"]:  # when it was stored / first seen differs run to run
        for key in ("created_at", "updated_at"):
            record.pop(key, None)
    return wall, float(stats.get("ttft_s", 0.0)), wall - float(stats.get("total_s", 0.0)), report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", default=BASE, help="commit of the baseline tree")
    parser.add_argument("--baseline-env", action="store_true", help="baseline: this tree, caches off")
    parser.add_argument("--store", action="store_true", help="store the records (default: --no-store)")
    a = parser.parse_args()
    if a.baseline_env:
        sides = {"this tree": (TREE, {}), "caches off": (TREE, {"LOGWARDEN_NO_START_CACHES": "1"})}
    else:
        sides = {"this tree": (TREE, {}), f"baseline {a.baseline}": (baseline_tree(a.baseline), {})}
    one_run(TREE, store=a.store, extra_env={})  # warm-up: page cache, cache entries written
    figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in sides}
    reference = None
    for i in range(a.runs):
        for name, (tree, env) in sides.items():
            wall, ttft, startup, report = one_run(tree, store=a.store, extra_env=env)
            if reference is None:
                reference = report
            elif report != reference:
                raise SystemExit(f"run {i} of {name}: the answer differs from the first run's")
            figures[name].append((wall, ttft, startup))
            print(f"run {i + 1} {name:22s} wall {wall:6.2f} s  ttft {ttft:5.3f} s  start-up {startup:5.2f} s",
                  flush=True)
    (mine, theirs) = figures.values()
    for label, k in (("wall", 0), ("ttft", 1), ("start-up", 2)):
        ratios = [m[k] / t[k] for m, t in zip(mine, theirs) if t[k]]
        print(f"{label}: this tree median {statistics.median(m[k] for m in mine):.2f} s, "
              f"{list(sides)[1]} {statistics.median(t[k] for t in theirs):.2f} s, "
              f"ratio median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")


if __name__ == "__main__":
    main()
