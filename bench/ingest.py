#!/usr/bin/env python3
"""End-to-end ingest benchmark: read + parse + mine + detect + (baselines) + store, rules-only, on a
generated ≥1M-line mixed log, against a baseline measured in the same run (plain `for line in
open(f)` + Drain3 with its default config, no masking, no storage).

Usage: python bench/ingest.py [--lines 1000000] [--dir /tmp/lw-bench] [--baseline both|judge|off]
       [--profile] [--json out.json] [--tree PATH] [--no-drain3]
Prints lines/s for each and the ratios; each pipeline run is its own process, so its peak memory
(max RSS) is its own. `--baseline both` runs the pipeline with baselines off, then on (judge).
`--profile` prints the top functions of the pipeline runs. `--tree` is another checkout whose
`logwarden/` the pipeline runs (e.g. an older commit's, `git worktree add /tmp/old 16e247c`), on
the same generated logs (this checkout's generator); `--no-drain3` skips the Drain3-alone
yardstick when the other tree is the yardstick. Each pipeline run also prints its lines per CPU
second (the child's process time): on a machine other jobs share, wall time moves with their
load far more than CPU time does.
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
    from gen_mixed_log import WEB_NETWORKS, generate

    marker = folder / f".complete-{lines}-networks-{WEB_NETWORKS}"  # a set an older generator wrote is not reused
    if not marker.exists():
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


def pipeline_process(files: list[Path], mode: str, profile: bool, tree: str) -> tuple[dict, float, float, str, float]:
    """`pipeline` in a child process: (metrics, seconds, CPU seconds, profile report, peak RSS MiB)."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_child, (files, mode, profile, tree))


def _child(files: list[Path], mode: str, profile: bool, tree: str) -> tuple[dict, float, float, str, float]:
    import resource

    sys.path.insert(0, tree)  # ahead of this checkout, which the module's top put first again
    import logwarden

    assert Path(logwarden.__file__).parent.parent == Path(tree), (logwarden.__file__, tree)

    from logwarden.cli.main import tune_gc

    tune_gc()  # as the CLI runs
    with tempfile.TemporaryDirectory() as db_dir:
        metrics, seconds, cpu_s, report = pipeline(files, Path(db_dir), profile, mode)
    return metrics, seconds, cpu_s, report, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pipeline(files: list[Path], db_dir: Path, profile: bool, mode: str = "judge") -> tuple[dict, float, float, str]:
    from logwarden.app.config import get_settings
    from logwarden.app.pipeline import Pipeline
    from logwarden.app.run_options import RunOptions
    from logwarden.app.store import open_store

    store = open_store(f"sqlite:///{db_dir / 'bench.db'}")
    profiler = cProfile.Profile() if profile else None
    started, cpu_started = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    # from the settings, as the CLI builds them: the compiled-pack cache included (a bare RunOptions has none)
    options = RunOptions.from_settings(get_settings(), rules_only=True, baseline=mode)
    metrics = Pipeline(store, None, options, command="bench").analyze(files)
    if profiler:
        profiler.disable()
    elapsed, cpu_s = time.perf_counter() - started, time.process_time() - cpu_started
    report = ""
    if profiler:
        buffer = io.StringIO()
        pstats.Stats(profiler, stream=buffer).sort_stats("cumulative").print_stats(30)
        report = buffer.getvalue()
    return metrics.as_dict(), elapsed, cpu_s, report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "lw-bench")
    parser.add_argument("--baseline", choices=("both", "judge", "off"), default="both")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--tree", type=Path, default=None, help="the checkout whose logwarden/ runs (default: this one)")
    parser.add_argument("--no-drain3", action="store_true", help="skip the Drain3-alone yardstick")
    args = parser.parse_args()
    tree = str((args.tree or ROOT).resolve())
    sys.path.insert(0, tree)  # before logwarden is imported
    import logwarden
    from logwarden.cli.main import tune_gc

    tune_gc()  # as the CLI runs
    print(f"logwarden from {Path(logwarden.__file__).parent}")
    files = ensure_logs(args.dir / "logs", args.lines)
    result: dict = {"machine": f"{platform.machine()} {platform.processor() or ''} cores={__import__('os').cpu_count()}",
                    "tree": tree}
    base_rate = None
    if not args.no_drain3:
        base_lines, base_s = baseline(files)
        base_rate = result["baseline_lines_per_s"] = base_lines / base_s
        print(f"baseline  (open + Drain3 alone)              {base_rate:>10,.0f} lines/s  ({base_lines:,} lines, {base_s:.1f} s)")
    modes = ("off", "judge") if args.baseline == "both" else (args.baseline,)
    for mode in modes:
        metrics, lw_s, cpu_s, report, rss = pipeline_process(files, mode, args.profile, tree)
        rate, cpu_rate = metrics["lines"] / lw_s, metrics["lines"] / cpu_s
        result[mode] = {"lines": metrics["lines"], "windows": metrics["windows"], "records": metrics["records"],
                        "deviations": metrics.get("deviations", 0), "lines_per_s": rate, "lines_per_cpu_s": cpu_rate,
                        "ratio_vs_baseline": rate / base_rate if base_rate else None, "peak_rss_mib": rss,
                        "errors": metrics["errors"]}
        versus = f"ratio vs baseline {rate / base_rate:.2f}x  " if base_rate else ""
        print(f"logwarden, baselines {mode:<5} (read+parse+mine+detect+store) {rate:>10,.0f} lines/s  "
              f"{cpu_rate:>8,.0f} lines/CPU-s  ({metrics['lines']:,} lines, {lw_s:.1f} s, peak RSS {rss:,.0f} MiB)  "
              f"{versus}records {metrics['records']:,}  deviations {result[mode]['deviations']:,}")
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
