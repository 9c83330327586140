#!/usr/bin/env python3
"""End-to-end ingest benchmark: read + parse + mine + detect + store, rules-only, on a generated
≥1M-line mixed log, against a baseline measured in the same run (plain `for line in open(f)` +
Drain3 with its default config, no masking, no storage).

Usage: python bench/ingest.py [--lines 1000000] [--dir /tmp/lw-bench] [--profile] [--json out.json]
Prints lines/s for both and the ratio. `--profile` prints the top functions of the pipeline run.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import platform
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def ensure_logs(folder: Path, lines: int) -> list[Path]:
    marker = folder / f".complete-{lines}"
    if not marker.exists():
        from gen_mixed_log import generate

        generate(folder, lines=lines)
        marker.touch()
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".") and p.name != "labels.jsonl")


def baseline(files: list[Path]) -> tuple[int, float]:
    """Plain Python line iteration + Drain3 alone (default config)."""
    from drain3 import TemplateMiner
    from drain3.template_miner_config import TemplateMinerConfig

    started = time.perf_counter()
    n = 0
    for path in files:
        miner = TemplateMiner(config=TemplateMinerConfig())
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                miner.add_log_message(line.rstrip("\n"))
                n += 1
    return n, time.perf_counter() - started


def pipeline(files: list[Path], db_dir: Path, profile: bool) -> tuple[dict, float, str]:
    from logwarden.app.pipeline import Pipeline, RunOptions
    from logwarden.app.store import open_store

    store = open_store(f"sqlite:///{db_dir / 'bench.db'}")
    profiler = cProfile.Profile() if profile else None
    started = time.perf_counter()
    if profiler:
        profiler.enable()
    metrics = Pipeline(store, None, RunOptions(rules_only=True), command="bench").analyze(files)
    if profiler:
        profiler.disable()
    elapsed = time.perf_counter() - started
    report = ""
    if profiler:
        buffer = io.StringIO()
        pstats.Stats(profiler, stream=buffer).sort_stats("cumulative").print_stats(30)
        report = buffer.getvalue()
    return metrics.as_dict(), elapsed, report


def main() -> int:
    from logwarden.cli.main import tune_gc

    tune_gc()  # as the CLI runs
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "lw-bench")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    files = ensure_logs(args.dir / "logs", args.lines)
    base_lines, base_s = baseline(files)
    with tempfile.TemporaryDirectory() as db_dir:
        metrics, lw_s, report = pipeline(files, Path(db_dir), args.profile)
    result = {
        "machine": f"{platform.machine()} {platform.processor() or ''} cores={__import__('os').cpu_count()}",
        "lines": metrics["lines"], "windows": metrics["windows"], "records": metrics["records"],
        "baseline_lines_per_s": base_lines / base_s, "logwarden_lines_per_s": metrics["lines"] / lw_s,
        "ratio_vs_baseline": (metrics["lines"] / lw_s) / (base_lines / base_s),
        "errors": metrics["errors"],
    }
    print(f"baseline  (open + Drain3 alone)              {result['baseline_lines_per_s']:>10,.0f} lines/s  ({base_lines:,} lines, {base_s:.1f} s)")
    print(f"logwarden (read+parse+mine+detect+store)     {result['logwarden_lines_per_s']:>10,.0f} lines/s  ({metrics['lines']:,} lines, {lw_s:.1f} s)")
    print(f"ratio logwarden / baseline                   {result['ratio_vs_baseline']:>10.2f}x")
    print(f"windows {metrics['windows']:,}  records {metrics['records']:,}")
    if report:
        print(report)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
