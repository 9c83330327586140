#!/usr/bin/env python3
"""End-to-end ingest benchmark: read + parse + mine + detect + (baselines) + store, rules-only, on a
generated ≥1M-line mixed log, against a baseline measured in the same run (plain `for line in
open(f)` + Drain3 with its default config, no masking, no storage).

Usage: python bench/ingest.py [--lines 1000000] [--dir /tmp/lw-bench] [--baseline both|judge|off]
       [--profile] [--json out.json]
Prints lines/s for each and the ratios; each pipeline run is its own process, so its peak memory
(max RSS) is its own. `--baseline both` runs the pipeline with baselines off, then on (judge).
`--profile` prints the top functions of the pipeline runs.
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


def pipeline_process(files: list[Path], mode: str, profile: bool) -> tuple[dict, float, str, float]:
    """`pipeline` in a child process: (metrics, seconds, profile report, peak RSS MiB)."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_child, (files, mode, profile))


def _child(files: list[Path], mode: str, profile: bool) -> tuple[dict, float, str, float]:
    import resource

    from logwarden.cli.main import tune_gc

    tune_gc()  # as the CLI runs
    with tempfile.TemporaryDirectory() as db_dir:
        metrics, seconds, report = pipeline(files, Path(db_dir), profile, mode)
    return metrics, seconds, report, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pipeline(files: list[Path], db_dir: Path, profile: bool, mode: str = "judge") -> tuple[dict, float, str]:
    from logwarden.app.config import get_settings
    from logwarden.app.pipeline import Pipeline, RunOptions
    from logwarden.app.store import open_store

    store = open_store(f"sqlite:///{db_dir / 'bench.db'}")
    profiler = cProfile.Profile() if profile else None
    started = time.perf_counter()
    if profiler:
        profiler.enable()
    # from the settings, as the CLI builds them: the compiled-pack cache included (a bare RunOptions has none)
    options = RunOptions.from_settings(get_settings(), rules_only=True, baseline=mode)
    metrics = Pipeline(store, None, options, command="bench").analyze(files)
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
    parser.add_argument("--baseline", choices=("both", "judge", "off"), default="both")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    files = ensure_logs(args.dir / "logs", args.lines)
    base_lines, base_s = baseline(files)
    result = {"machine": f"{platform.machine()} {platform.processor() or ''} cores={__import__('os').cpu_count()}",
              "baseline_lines_per_s": base_lines / base_s}
    print(f"baseline  (open + Drain3 alone)              {base_lines / base_s:>10,.0f} lines/s  ({base_lines:,} lines, {base_s:.1f} s)")
    modes = ("off", "judge") if args.baseline == "both" else (args.baseline,)
    for mode in modes:
        metrics, lw_s, report, rss = pipeline_process(files, mode, args.profile)
        rate = metrics["lines"] / lw_s
        result[mode] = {"lines": metrics["lines"], "windows": metrics["windows"], "records": metrics["records"],
                        "deviations": metrics.get("deviations", 0), "lines_per_s": rate,
                        "ratio_vs_baseline": rate / (base_lines / base_s), "peak_rss_mib": rss,
                        "errors": metrics["errors"]}
        print(f"logwarden, baselines {mode:<5} (read+parse+mine+detect+store) {rate:>10,.0f} lines/s  "
              f"({metrics['lines']:,} lines, {lw_s:.1f} s, peak RSS {rss:,.0f} MiB)  "
              f"ratio vs baseline {result[mode]['ratio_vs_baseline']:.2f}x  records {metrics['records']:,}  "
              f"deviations {result[mode]['deviations']:,}")
        if report:
            print(report)
    if len(modes) == 2:
        result["judge_vs_off"] = result["judge"]["lines_per_s"] / result["off"]["lines_per_s"]
        print(f"baselines on / off                           {result['judge_vs_off']:>10.2f}x")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
