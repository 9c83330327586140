"""`logwarden baseline learn PATH…`: learn what normal looks like from history (last week's rotated
logs, say) without making records.

Owns: reading files and folders through the pipeline's own stages (ingest → parse → mine), the
baseline in `learn` mode (everything learned, nothing judged: the analyst vouches for this
history), and committing what was learned in batches. No records, windows, offsets or runs are
written: the same files analysed later are read from line 1 as usual. Knows nothing of the CLI.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from logwarden.app.baseline import Baseline
from logwarden.app.events import ErrorRow
from logwarden.app.ingest import Skipped, TailRead, iter_files, source_name
from logwarden.app.mine import SourceMiner, windows
from logwarden.app.parse import parse_stream
from logwarden.app.parse.dating import date_files

FLUSH_EVERY = 64  # windows between commits (bounded memory for the deltas)


@dataclass(slots=True)
class Learned:
    files: int = 0
    lines: int = 0
    windows: int = 0
    errors: int = 0
    rows: int = 0  # profile rows written (a row written twice counts twice)


def learn_paths(store, paths: Sequence[str | Path], *, include: Sequence[str] = (), exclude: Sequence[str] = (),
                node: str | None = None, window_max_lines: int = 2000, window_max_gap_s: float = 900.0,
                progress: Callable[[str, int], None] = lambda _name, _n: None) -> Learned:
    baseline, learned = Baseline(store, mode="learn"), Learned()
    found = list(iter_files(paths, include=include, exclude=exclude))
    dates = date_files([item for item in found if isinstance(item, Path)])  # year-less stamps dated as analyze dates them
    for item in found:
        if isinstance(item, ErrorRow):
            learned.errors += 1
            continue
        if isinstance(item, Skipped):  # a link out of the folder
            continue
        learned.files += 1
        source = source_name(item, node)
        reader = TailRead(item, final_partial=True)
        decision, events = parse_stream((x for x in reader if not isinstance(x, ErrorRow)), path=source,
                                        reference_time=dates.choose(str(item)).reference_time)
        miner = SourceMiner()
        for window in windows(events, miner, source=source, inode=0, fmt=decision.name,
                              max_lines=window_max_lines, max_gap_s=window_max_gap_s):
            baseline.observe(window, miner)
            learned.windows += 1
            learned.lines += len(window.events)
            progress("lines", len(window.events))
            if learned.windows % FLUSH_EVERY == 0:
                learned.rows += _flush(store, baseline)
    learned.rows += _flush(store, baseline)
    return learned


def _flush(store, baseline: Baseline) -> int:
    with store.transaction() as tx:
        return baseline.flush(tx)
