"""Shared pieces of the watcher/rotation tests: numbered sshd lines, appending, and how to read
back which lines of a file the store accounts for (its analysed windows)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from logwarden.app.pipeline import Pipeline
from logwarden.app.run_options import RunOptions
from logwarden.app.watch import Watcher


def sshd_line(i: int) -> str:
    return (f"Mar  1 10:{(i // 60) % 60:02d}:{i % 60:02d} web01 sshd[{1000 + i}]: Failed password for invalid user "
            f"u{i} from 203.0.113.{i % 3 + 1} port {30000 + i} ssh2\n")


def append(path: Path, start: int, n: int) -> int:
    """Append lines `start .. start+n-1`; returns the next number."""
    with open(path, "a") as fh:
        fh.writelines(sshd_line(i) for i in range(start, start + n))
    return start + n


def watcher(store, folder: Path, *, from_start: bool = False, partial_timeout_s: float = 0.3) -> Watcher:
    options = RunOptions(rules_only=True, commit_every_windows=None, incremental=True)
    pipeline = Pipeline(store, None, options, command="watch")
    return Watcher([folder], pipeline, max_batch=50, max_delay_ms=0, partial_timeout_s=partial_timeout_s,
                   from_start=from_start)


def spans(store, source: Path | str, inode: int | None = None) -> list[tuple[int, int]]:
    return sorted((w.line_start, w.line_end) for w in store.list_windows(source=str(source), inode=inode))


def covered(found: list[tuple[int, int]]) -> list[int]:
    return sorted(n for a, b in found for n in range(a, b + 1))


def analysed_lines(store) -> int:
    return sum(w.line_count for w in store.list_windows())


def gzip_file(path: Path) -> Path:
    """`gzip PATH` as logrotate runs it: PATH.gz written, then PATH removed."""
    target = path.with_name(path.name + ".gz")
    with open(path, "rb") as src, gzip.open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()
    return target


def copytruncate(path: Path, copy: Path) -> None:
    shutil.copyfile(path, copy)
    with open(path, "r+") as fh:
        fh.truncate(0)
