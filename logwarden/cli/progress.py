"""The live progress of `analyze` on stderr: one line per phase (read, review, grouping, stories),
each waiting, running with its own clock, or done, and an ETA line that says in words what it
rests on.

What it fixes: the bytes bar reached its end in seconds and then said "ETA 0:00:03" through a
quarter of an hour of model work; an ETA of `?` said nothing of why; a budget of 3 minutes did not
cap an ETA of 20; three minutes of story writing showed the review's frozen `2/2`. So:
- reading: the bytes left at the rate measured while reading;
- the model: the prompts left × the seconds per prompt measured in this phase (the stories: the
  stories left × seconds per story), never more than the time budget left (`--llm-budget`) — nor
  less than the batch in flight, which the budget, looked at between batches, lets end;
- a rate not measured yet is said so ("not known: 4 prompts left, none answered yet …"), with what
  the budget does about it;
- a running phase shows its own elapsed time, ticking, and the stories in the batch being written.

Fed by the pipeline's (counter, increment) callback (app/pipeline.py's progress contract: counters,
and `phase:<name>` with the phase's amount of work); knows nothing of the pipeline itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from logwarden.cli.terminal import byte_size

if TYPE_CHECKING:
    from logwarden.app.review import Budget

PHASES = ("read", "review", "grouping", "stories")
MODEL_PHASES = ("review", "stories")


# ---- the arithmetic -------------------------------------------------------------------------------

def work_left_s(*, done: float, total: float, elapsed_s: float) -> float | None:
    """Seconds for what is left of `total` at the rate of the `done` part, which took `elapsed_s`;
    None while nothing is done (no rate yet)."""
    if done >= total:
        return 0.0
    if done <= 0 or elapsed_s <= 0:
        return None
    return (total - done) * elapsed_s / done


def budget_left_s(budget: Budget | None, model_s: float) -> float | None:
    """Seconds of model time the budget still allows after `model_s`; None when it has no time bound."""
    if budget is None or budget.seconds is None:
        return None
    return max(budget.seconds - model_s, 0.0)


@dataclass(frozen=True, slots=True)
class Eta:
    """Seconds left (None: not known) and the words that say what the figure rests on."""

    seconds: float | None
    why: str

    def text(self) -> str:
        if self.seconds is None:
            return f"ETA not known: {self.why}"
        return f"ETA {clock(self.seconds)} ({self.why})"


def model_eta(*, left: int, done: int, elapsed_s: float, unit: str, budget_s: float | None,
              in_flight: int = 0) -> Eta:
    """The model's work left: `left` prompts (or stories) at the seconds each of the `done` ones took,
    capped by the time budget left (None: no time bound). The budget is looked at between batches:
    the batch in flight (`in_flight` of them) when it runs out still ends, so the cap is never less."""
    if left <= 0:
        return Eta(0.0, f"no {PLURAL[unit]} left")
    if not done or elapsed_s <= 0:
        return Eta(None, f"{_count(left, unit)} left, none answered yet to measure the rate; {_bound(budget_s)}")
    each_s = elapsed_s / done
    work, each = left * each_s, f"{_count(left, unit)} left × {each_s:,.1f} s each"
    if budget_s is None or budget_s >= work:
        return Eta(work, each)
    flight = min(in_flight, left) * each_s
    if flight > budget_s:
        return Eta(flight, f"the batch in flight, the last in the time budget; {each} would take {clock(work)}")
    return Eta(budget_s, f"the time budget's end; {each} would take {clock(work)}")


def _bound(budget_s: float | None) -> str:
    if budget_s is None:
        return "no time budget"
    if budget_s == 0:
        return "the time budget is spent: the batch in flight is the last"
    return f"the time budget, {clock(budget_s)} left, stops it after the batch then in flight"


def read_eta(*, bytes_read: int, bytes_total: int, elapsed_s: float) -> Eta:
    """The bytes left at the rate read so far."""
    if not bytes_total:
        return Eta(None, "the size of the input is not known")
    work = work_left_s(done=bytes_read, total=bytes_total, elapsed_s=elapsed_s)
    if work is None:
        return Eta(None, "nothing read yet to measure the rate")
    if not work:
        return Eta(0.0, "all read")
    return Eta(work, f"{byte_size(bytes_total - bytes_read)} left at {byte_size(bytes_read / elapsed_s)}/s")


def then_model(reading: Eta, budget_s: float | None) -> Eta:
    """While reading, with a model to run after it: its rate is not measured yet, only the budget bounds it."""
    lasts = clock(reading.seconds) if reading.seconds is not None else f"not known ({reading.why})"
    if budget_s is None:
        return Eta(None, f"reading {lasts}, then the model's work: not measured yet, no time budget")
    total = None if reading.seconds is None else reading.seconds + budget_s
    return Eta(total, f"reading {lasts}, then the model's time budget, {clock(budget_s)}, and its last batch")


PLURAL = {"prompt": "prompts", "story": "stories"}


def _count(n: int, unit: str) -> str:
    return f"{n:,} {unit if n == 1 else PLURAL[unit]}"


def clock(seconds: float) -> str:
    return str(timedelta(seconds=round(seconds)))


# ---- the display --------------------------------------------------------------------------------

class RunProgress:
    """A context manager whose `update(name, n)` is the pipeline's progress callback; on a terminal
    it draws the phases live (rich `Live`, redrawn 4 times a second, so running clocks move)."""

    COUNTERS = ("lines", "windows", "records", "errors")

    def __init__(self, paths: Sequence[str | Path], console: Console, *, model: bool, budget: Budget | None = None,
                 phases: Sequence[str] = PHASES, clock: Callable[[], float] = time.monotonic):
        self.total = sum(_size_of(Path(p)) for p in paths)
        self.counts: dict[str, int] = dict.fromkeys(
            (*self.COUNTERS, "bytes", "llm_queued", "llm_calls", "llm_done", "prompt_tokens", "new_tokens",
             "stories_started", "stories_done"), 0)
        self.model = model
        self.budget = budget if model else None
        self.clock = clock
        self.phases = [p for p in phases if model or p not in MODEL_PHASES]  # `incidents group`: no reading
        self.phase = self.phases[0]
        self.started: dict[str, float] = {self.phase: clock()}
        self.ended: dict[str, float] = {}
        self.work: dict[str, int] = {}  # the amount of work each phase began with (prompts, records, stories)
        self.done_at_start: dict[str, int] = {}  # llm_done when the review began (a --resume counts from there)
        self.live = Live(console=console, transient=True, get_renderable=self.render) if console.is_terminal else None

    def __enter__(self) -> Callable[[str, int], None]:
        if self.live is not None:
            self.live.start()
        return self.update

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()

    def update(self, name: str, n: int) -> None:
        if name.startswith("phase:"):
            self._begin(name.removeprefix("phase:"), n)
        else:
            self.counts[name] = self.counts.get(name, 0) + n

    def _begin(self, phase: str, work: int) -> None:
        now = self.clock()
        if phase != self.phase:
            self.ended[self.phase] = now
        self.phase, self.started[phase], self.work[phase] = phase, now, work
        self.done_at_start[phase] = self.counts["llm_done"]

    # ---- what it says

    def elapsed(self, phase: str) -> float:
        if phase not in self.started:
            return 0.0
        return self.ended.get(phase, self.clock()) - self.started[phase]

    def model_s(self) -> float:
        """The model time so far: the review's and the stories' phases (the budget counts model work only)."""
        return sum(self.elapsed(p) for p in MODEL_PHASES)

    def eta(self) -> Eta:
        """The run's time left, in words, for the phase it is in."""
        c, budget_s = self.counts, budget_left_s(self.budget, self.model_s())
        if self.phase == "read":
            reading = read_eta(bytes_read=c["bytes"], bytes_total=self.total, elapsed_s=self.elapsed("read"))
            return then_model(reading, budget_s) if self.model else reading
        if self.phase == "review":
            done = min(c["llm_done"] - self.done_at_start["review"], self.work["review"])
            review = model_eta(left=self.work["review"] - done, done=done, elapsed_s=self.elapsed("review"),
                               unit="prompt", budget_s=budget_s, in_flight=c["llm_calls"] - c["llm_done"])
            return Eta(review.seconds, review.why + "; then the stories")
        if self.phase == "stories":
            done = c["stories_done"]
            return model_eta(left=self.work["stories"] - done, done=done, elapsed_s=self.elapsed("stories"),
                             unit="story", budget_s=budget_s, in_flight=c["stories_started"] - done)
        after = (f"; then the stories, within the time budget left ({clock(budget_s)})" if budget_s is not None
                 else "; then the stories, not measured yet" if self.model else "")
        return Eta(None, "the regrouping is not measured" + after)

    def eta_text(self) -> str:
        return self.eta().text()

    def render(self) -> RenderableType:
        grid = Table.grid(expand=True, padding=(0, 1))
        grid.add_column(no_wrap=True, width=8)
        grid.add_column(no_wrap=True, width=10)
        grid.add_column(no_wrap=True, overflow="ellipsis", ratio=1)
        grid.add_column(no_wrap=True, justify="right")
        for phase in self.phases:
            state = "done" if phase in self.ended else "running" if phase == self.phase else "waiting"
            grid.add_row(Text(phase, style="bold" if state == "running" else "dim" if state == "waiting" else ""),
                         self._bar(phase, state), Text(self.detail(phase, state)),
                         Text(clock(self.elapsed(phase)) if state != "waiting" else "", style="progress.elapsed"))
        return Group(grid, Text(self.eta_text(), style="progress.remaining", overflow="fold"))

    def _bar(self, phase: str, state: str) -> ProgressBar:
        if state == "waiting":
            return ProgressBar(total=1, completed=0, width=10)
        if state == "done":
            return ProgressBar(total=1, completed=1, width=10)
        done, total = self._share(phase)
        return ProgressBar(total=total, completed=done, width=10, pulse=total is None, animation_time=self.clock())

    def _share(self, phase: str) -> tuple[float, float | None]:
        c = self.counts
        if phase == "read":
            return c["bytes"], self.total or None
        if phase == "review":
            return c["llm_done"] - self.done_at_start["review"], self.work["review"] or None
        if phase == "stories":
            return c["stories_done"], self.work["stories"] or None
        return 0, None

    def detail(self, phase: str, state: str) -> str:
        c = self.counts
        if phase == "read":
            return " · ".join(f"{c[k]:,} {k}" for k in self.COUNTERS)
        if state == "waiting":
            return f"waiting · {c['llm_queued']:,} prompts queued" if phase == "review" else "waiting"
        if phase == "review":
            done = c["llm_done"] - self.done_at_start["review"]
            if not self.work["review"]:
                return "nothing for the model to review"
            return (f"{done:,}/{self.work['review']:,} prompts · tokens {c['prompt_tokens']:,} in "
                    f"{c['new_tokens']:,} out")
        if phase == "grouping":
            around = self.work.get("grouping", 0)
            what = f"incidents around {around:,} records" if around else "the incidents of the whole store"
            return what + (" · done" if state == "done" else "")
        total, started, done = self.work["stories"], c["stories_started"], c["stories_done"]
        if not total:
            return "no incident needs a story"
        if state == "running" and started > done:
            return f"writing stories {done + 1}–{started} of {total} · {done} written"
        return f"{done} of {total} written"


def _size_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    return 0
