#!/usr/bin/env python3
"""Detector alone: events per CPU second of `Detector.scan` with the default pack, per file of
bench/ingest.py's generated mix (40,000 lines each, parsed once, scanned in 2,000-event windows,
best of 2), against the same measurement of another source tree (`--baseline-tree`, e.g. a
`git archive` of an earlier commit) run in a child process of the same run, alternated.

Usage: python bench/detector.py [--baseline-tree DIR] [--lines 40000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure(lines_per_file: int) -> dict[str, float]:
    """{file name: events per CPU second} for the tree this process imports."""
    from ingest import ensure_logs

    from logwarden.app.detect import load_rules
    from logwarden.app.detect.detector import Detector
    from logwarden.app.events import LogLine
    from logwarden.app.parse import parse_stream
    from logwarden.cli.main import tune_gc

    tune_gc()
    rules = load_rules()
    rates = {}
    for path in ensure_logs(Path(tempfile.gettempdir()) / "lw-bench" / "logs", 1_000_000):
        with open(path, errors="replace") as fh:
            lines = [LogLine(source=str(path), line_no=n, text=text.rstrip("\n"), inode=0, offset=0)
                     for n, text in zip(range(1, lines_per_file + 1), fh)]
        events = list(parse_stream(iter(lines), path=str(path))[1])
        best = float("inf")
        for _ in range(2):
            detector, start = Detector(rules), time.process_time()
            for i in range(0, len(events), 2000):
                detector.scan(events[i:i + 2000])
            best = min(best, time.process_time() - start)
        rates[path.name] = len(events) / max(best, 1e-9)
    return rates


def measure_tree(tree: Path, lines_per_file: int) -> dict[str, float]:
    env = os.environ | {"PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-P", str(Path(__file__).resolve()), "--child", "--lines", str(lines_per_file)],
                         env=env, cwd=tree, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-tree", type=Path, help="another source tree to measure in the same run")
    parser.add_argument("--lines", type=int, default=40_000, help="lines of each generated file")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of this tree and the baseline")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # the tree under test is the working directory (and PYTHONPATH), not this file's
        sys.path[:0] = [str(Path.cwd()), str(Path.cwd() / "bench"), str(ROOT / "bench")]
        print(json.dumps(measure(args.lines)))
        return 0
    runs: dict[str, list[dict[str, float]]] = {"this": [], "baseline": []}
    for _ in range(args.rounds):
        runs["this"].append(measure_tree(ROOT, args.lines))
        if args.baseline_tree:
            runs["baseline"].append(measure_tree(args.baseline_tree.resolve(), args.lines))
    print(f"{'file':<20} {'this tree (ev/CPU s)':>22} {'baseline':>12} {'ratio':>7}")
    for name in runs["this"][0]:
        mine = max(r[name] for r in runs["this"])
        base = max((r[name] for r in runs["baseline"] if name in r), default=None)
        ratio = f"{mine / base:.2f}x" if base else "-"
        print(f"{name:<20} {mine:>22,.0f} {base or 0:>12,.0f} {ratio:>7}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
