"""The live progress of `analyze` on stderr: one bar for the bytes read, one for the model's prompts
(answered of queued, tokens in and out), and an ETA that weighs the model's work, not the lines.

Reading is fast and the model is slow (minutes a batch on a CPU): a bar of bytes alone reached
its end in seconds and then said "ETA 0:00:03" for a quarter of an hour. Here the prompts still
to come are extrapolated from those queued per byte read so far, and each costs what the
answered ones cost. Fed by the pipeline's (counter, increment) callback; knows nothing of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.text import Text


def estimate_eta(*, elapsed_s: float, bytes_read: int, bytes_total: int, queued: int, done: int) -> float | None:
    """Seconds left, or None while nothing tells yet. Without model work: the bytes left at the
    rate read so far. With it: the prompts still to come — those queued, scaled up to the whole
    input when only part of it has been read — at the time each answered one took."""
    share_read = bytes_read / bytes_total if bytes_total else 1.0
    if queued == 0:
        if not bytes_read or not bytes_total:
            return None
        return elapsed_s * max(bytes_total - bytes_read, 0) / bytes_read
    if done == 0:
        return None
    expected = queued / share_read if share_read > 0 else queued
    left = max(expected - done, queued - done, 0)
    return left * elapsed_s / done


class _EtaColumn(ProgressColumn):
    def render(self, task) -> Text:
        eta = task.fields.get("eta")
        if eta is None:
            return Text("ETA ?", style="progress.remaining")
        return Text(f"ETA {timedelta(seconds=round(eta))}", style="progress.remaining")


class RunProgress:
    """A context manager whose `update(name, n)` is the pipeline's progress callback."""

    COUNTERS = ("lines", "windows", "records", "errors")

    def __init__(self, paths: Sequence[str | Path], console: Console, *, model: bool,
                 clock: Callable[[], float] = time.monotonic):
        self.total = sum(_size(Path(p)) for p in paths)
        self.counts: dict[str, int] = dict.fromkeys(
            (*self.COUNTERS, "bytes", "llm_queued", "llm_done", "prompt_tokens", "new_tokens"), 0)
        self.model = model
        self.clock = clock
        self.started = clock()
        self.progress = Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                                 TimeElapsedColumn(), _EtaColumn(), console=console, transient=True,
                                 disable=not console.is_terminal)
        self.read_task = self.progress.add_task("read", total=self.total or None, eta=None)
        self.model_task = self.progress.add_task("model", total=None, eta=None, visible=model)

    def __enter__(self) -> Callable[[str, int], None]:
        self.progress.start()
        return self.update

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def update(self, name: str, n: int) -> None:
        self.counts[name] = self.counts.get(name, 0) + n
        eta = self.eta()
        c = self.counts
        self.progress.update(self.read_task, completed=c["bytes"], eta=None if self.model else eta,
                             description=" ".join(f"{k} {c[k]:,}" for k in self.COUNTERS))
        if self.model:
            self.progress.update(self.model_task, completed=c["llm_done"], total=max(c["llm_queued"], 1), eta=eta,
                                 description=f"model prompts {c['llm_done']:,}/{c['llm_queued']:,} queued · tokens "
                                             f"{c['prompt_tokens']:,} in {c['new_tokens']:,} out")

    def eta(self) -> float | None:
        c = self.counts
        return estimate_eta(elapsed_s=self.clock() - self.started, bytes_read=c["bytes"], bytes_total=self.total,
                            queued=c["llm_queued"], done=c["llm_done"])

    def eta_text(self) -> str:
        return _EtaColumn().render(self.progress.tasks[self.model_task if self.model else self.read_task]).plain


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    return 0
