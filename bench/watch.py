#!/usr/bin/env python3
"""Watcher throughput: lines/s the watcher sustains while a writer appends, rules-only and (with
`--model`) with the embedded model, against batch `analyze` of the same lines in the same run —
on SQLite, and on a throw-away PostgreSQL server (Debian's binaries, as the tests start it) in
the same run (`--no-postgresql` skips it). Besides wall-clock lines/s it prints lines per CPU
second of this process (less sensitive to other load on a shared machine; the PostgreSQL
server's own CPU is not in it).

Usage: python bench/watch.py [--lines 200000] [--model] [--model-lines 2000] [--threads 2] [--no-postgresql]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def source_lines(n: int) -> list[str]:
    from ingest import ensure_logs

    files = ensure_logs(Path(tempfile.gettempdir()) / "lw-bench" / "logs", 1_000_000)
    auth = next(p for p in files if p.name == "auth.log")
    with open(auth, encoding="utf-8", errors="replace") as fh:
        return [line for _, line in zip(range(n), fh)]


def pipeline(url: str, engine=None, *, batch: bool = False):
    from logwarden.app.pipeline import Pipeline
    from logwarden.app.run_options import RunOptions
    from logwarden.app.store import open_store

    options = RunOptions(rules_only=engine is None, commit_every_windows=64 if batch else None,
                         incremental=not batch)
    return Pipeline(open_store(url), engine, options, command="bench")


def batch_rate(lines: list[str], tmp: Path, url: str, engine=None) -> float:
    path = tmp / "batch" / "auth.log"
    path.parent.mkdir()
    path.write_text("".join(lines))
    clock = _Clock()
    pipeline(url, engine, batch=True).analyze([path])
    return clock.rates(len(lines))


class _Clock:
    """Wall and process-CPU time since creation → (lines/s, lines per CPU second)."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def rates(self, lines: int) -> tuple[float, float]:
        return lines / (time.perf_counter() - self.wall), lines / max(time.process_time() - self.cpu, 1e-9)


def watch_rate(lines: list[str], tmp: Path, url: str, engine=None, chunk: int = 500) -> tuple[float, float]:
    """A writer appends `chunk` lines at a time as fast as it can; the watcher follows."""
    from logwarden.app.watch import Watcher

    folder = tmp / "watched"
    folder.mkdir()
    target = folder / "auth.log"
    target.touch()
    watcher = Watcher([folder], pipeline(url, engine), max_batch=500, max_delay_ms=200, from_start=True)

    def write() -> None:
        with open(target, "a") as fh:
            for i in range(0, len(lines), chunk):
                fh.writelines(lines[i:i + chunk])
                fh.flush()

    clock = _Clock()
    writer = threading.Thread(target=write)
    writer.start()
    while watcher.stats.lines < len(lines):
        watcher.poll()
    writer.join()
    rates = clock.rates(len(lines))
    watcher.pipeline.finish()
    return rates


def measure(label: str, lines: list[str], stores, engine=None) -> None:
    """`stores`: (name, url factory) pairs; each factory gives a fresh, empty store."""
    for store_name, fresh in stores:
        tmp = Path(tempfile.mkdtemp(prefix="lw-watch-"))
        try:
            batch = batch_rate(lines, tmp, fresh(tmp, "batch"), engine)
            watched = watch_rate(lines, tmp, fresh(tmp, "watch"), engine)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"{label:<20} {store_name:<10} watcher {watched[0]:>8,.0f} lines/s ({watched[1]:>8,.0f}/CPU s)   "
              f"batch analyze {batch[0]:>8,.0f} lines/s ({batch[1]:>8,.0f}/CPU s)   ratio {watched[0] / batch[0]:.2f}x"
              f"   ({len(lines):,} lines)", flush=True)


def sqlite_store(tmp: Path, name: str) -> str:
    return f"sqlite:///{tmp / name}.db"


def main() -> int:
    from logwarden.cli.main import tune_gc

    tune_gc()  # as the CLI runs
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--model", action="store_true", help="also measure with the embedded model")
    parser.add_argument("--model-lines", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-postgresql", action="store_true", help="SQLite only")
    args = parser.parse_args()
    stores = [("sqlite", sqlite_store)]
    cluster = None
    if not args.no_postgresql:
        sys.path.insert(0, str(ROOT / "tests"))
        from _pg_helpers import PgCluster

        cluster = PgCluster().start()
        stores.append(("postgresql", lambda _tmp, _name: cluster.create_database()))
    try:
        measure("rules-only", source_lines(args.lines), stores)
        if args.model:
            from logwarden.app.backends import EngineOptions, open_engine
            from logwarden.app.config import get_settings

            engine = open_engine(EngineOptions.from_settings(get_settings(), model="embedded", threads=args.threads))
            measure("embedded model (suspicious policy)", source_lines(args.model_lines), stores, engine)
    finally:
        if cluster is not None:
            cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
