"""The progress of `analyze` (issue 45, item 5): every phase named, an ETA that rests on what was
measured (bytes at the read rate, prompts × seconds per prompt, stories × seconds per story) and
never beyond the time budget left, a rate not measured said in words (it was `ETA ?`), and a story
phase that moves (it showed the review's frozen `2/2` for three minutes). A fake clock: no timing."""

from __future__ import annotations

import io

import pytest
from _fake_engine import FakeEngine
from _log_fixtures import write_logs
from rich.console import Console

from logwarden.app.pipeline import Pipeline, RunOptions
from logwarden.app.review import Budget
from logwarden.app.store import open_store
from logwarden.cli.progress import RunProgress, budget_left_s, model_eta, read_eta, then_model, work_left_s

GOOD = ('{"findings":[{"evidence":["T1"],"anomaly":"30 failed logins then a root login from 203.0.113.7",'
        '"category":"brute_force","techniques":["T1110.001"],"risk_level":"critical"}],"recommendation":"Block it."}')


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_prompts_left_times_the_seconds_per_prompt():
    eta = model_eta(left=90, done=10, elapsed_s=100, unit="prompt", budget_s=None)
    assert eta.seconds == pytest.approx(900)
    assert eta.text() == "ETA 0:15:00 (90 prompts left × 10.0 s each)"


def test_the_time_budget_left_caps_the_eta_and_says_so():
    eta = model_eta(left=90, done=10, elapsed_s=100, unit="prompt", budget_s=120)
    assert eta.seconds == 120
    assert eta.text() == "ETA 0:02:00 (the time budget's end; 90 prompts left × 10.0 s each would take 0:15:00)"
    # the budget is looked at between batches: the batch in flight when it runs out ends first
    spent = model_eta(left=90, done=10, elapsed_s=100, unit="prompt", budget_s=0, in_flight=4)
    assert spent.seconds == 40 and spent.text().startswith("ETA 0:00:40 (the batch in flight, the last in the time")
    assert budget_left_s(Budget.parse("3m"), 100) == 80
    assert budget_left_s(Budget.parse("3m"), 500) == 0  # spent: nothing more, never negative
    assert budget_left_s(Budget.parse("20000tok"), 100) is None and budget_left_s(None, 5) is None


def test_an_unmeasured_rate_is_said_in_words_with_the_budget_as_its_bound():
    unknown = model_eta(left=40, done=0, elapsed_s=30, unit="prompt", budget_s=None)
    assert unknown.seconds is None
    assert unknown.text() == ("ETA not known: 40 prompts left, none answered yet to measure the rate; "
                              "no time budget")
    bounded = model_eta(left=40, done=0, elapsed_s=30, unit="prompt", budget_s=180)
    assert bounded.text() == ("ETA not known: 40 prompts left, none answered yet to measure the rate; the time "
                              "budget, 0:03:00 left, stops it after the batch then in flight")
    assert model_eta(left=4, done=0, elapsed_s=300, unit="story", budget_s=0).text().endswith(
        "the time budget is spent: the batch in flight is the last")
    assert "?" not in unknown.text() + bounded.text()
    assert read_eta(bytes_read=0, bytes_total=1000, elapsed_s=3).text() == \
        "ETA not known: nothing read yet to measure the rate"


def test_reading_is_the_bytes_left_at_the_read_rate_then_the_budget():
    reading = read_eta(bytes_read=500, bytes_total=2000, elapsed_s=10)
    assert reading.seconds == pytest.approx(30)
    assert work_left_s(done=5, total=5, elapsed_s=3) == 0 and work_left_s(done=0, total=5, elapsed_s=3) is None
    after = then_model(reading, 180)
    assert after.seconds == pytest.approx(210)
    assert after.text() == "ETA 0:03:30 (reading 0:00:30, then the model's time budget, 0:03:00, and its last batch)"
    assert then_model(reading, None).text().startswith("ETA not known: reading 0:00:30, then the model's work")


def _progress(tmp_path, *, budget: Budget | None):
    log = tmp_path / "a.log"
    log.write_bytes(b"x" * 10_000)
    clock = FakeClock()
    progress = RunProgress([log], Console(file=io.StringIO(), width=80), model=True, budget=budget, clock=clock)
    return progress, clock


def test_the_review_rate_is_measured_in_its_own_phase_and_capped_by_the_budget(tmp_path):
    """Reading took 50 s; 10 of 100 prompts in the 100 s after: 90 × 10 s, not 90 × 15 s."""
    progress, clock = _progress(tmp_path, budget=Budget.parse("5m"))
    progress.update("bytes", 10_000)
    progress.update("llm_queued", 100)
    clock.now = 50.0
    progress.update("phase:review", 100)
    assert progress.eta_text().startswith("ETA not known: 100 prompts left, none answered yet to measure the rate; "
                                          "the time budget, 0:05:00 left, stops it")
    clock.now = 150.0
    progress.update("llm_done", 10)
    assert progress.eta().seconds == pytest.approx(200)  # 900 s of work, 200 s of budget left
    assert progress.eta_text().startswith("ETA 0:03:20 (the time budget's end; 90 prompts left × 10.0 s each")
    progress.update("llm_calls", 14)  # 10 answered, a batch of 4 in flight
    clock.now = 400.0  # the budget ran out at 350 s: the batch in flight still ends, 4 × 350 s / 10
    assert progress.eta().seconds == pytest.approx(140)
    assert progress.eta_text().startswith("ETA 0:02:20 (the batch in flight, the last in the time budget")


def test_every_phase_is_named_and_the_story_phase_moves(tmp_path):
    progress, clock = _progress(tmp_path, budget=None)
    progress.update("bytes", 10_000)
    clock.now = 10.0
    progress.update("phase:review", 2)
    progress.update("llm_done", 2)
    clock.now = 20.0
    progress.update("phase:grouping", 30)
    clock.now = 21.0
    progress.update("phase:stories", 6)
    progress.update("stories_started", 4)
    shown = _render(progress)
    assert [line.split()[0] for line in shown.splitlines()[:4]] == ["read", "review", "grouping", "stories"]
    assert "writing stories 1–4 of 6" in shown and "2/2 prompts" in shown
    assert "none answered yet" in shown  # the first batch of stories gives the rate
    clock.now = 81.0  # a minute into the first batch: its clock moves though no count does
    assert "0:01:00" in _render(progress).splitlines()[3]
    progress.update("stories_done", 4)
    progress.update("stories_started", 2)
    later = _render(progress)
    assert "writing stories 5–6 of 6 · 4 written" in later
    assert progress.eta().seconds == pytest.approx(30)  # 2 stories left × 15 s each
    assert all(len(line) <= 80 for line in later.splitlines())


def _render(progress: RunProgress) -> str:
    console = Console(file=io.StringIO(), width=80)
    console.print(progress.render())
    return console.file.getvalue()


def test_the_pipeline_announces_each_phase_in_order(tmp_path):
    write_logs(tmp_path / "logs")
    events: list[tuple[str, int]] = []
    Pipeline(open_store(f"sqlite:///{tmp_path / 'lw.db'}"), FakeEngine(GOOD), RunOptions(llm_policy="signals"),
             progress=lambda name, n: events.append((name, n))).analyze([tmp_path / "logs"])
    phases = [(name, n) for name, n in events if name.startswith("phase:")]
    assert [name for name, _ in phases] == ["phase:review", "phase:grouping", "phase:stories"]
    queued = sum(n for name, n in events if name == "llm_queued")
    assert phases[0][1] == queued > 0  # the review begins with every prompt the reading queued
    stories = phases[2][1]
    assert stories > 0
    assert sum(n for name, n in events if name == "stories_done") == stories
    assert sum(n for name, n in events if name == "stories_started") == stories


def test_incidents_group_shows_its_two_phases(tmp_path):
    clock = FakeClock()
    progress = RunProgress([], Console(file=io.StringIO(), width=80), model=True, phases=("grouping", "stories"),
                           budget=Budget.parse("2m"), clock=clock)
    progress.update("phase:grouping", 0)
    clock.now = 5.0
    shown = _render(progress)
    assert [line.split()[0] for line in shown.splitlines()[:2]] == ["grouping", "stories"]
    assert "the incidents of the whole store" in shown and "done" not in shown.splitlines()[0]
    assert "then the stories, within the time budget left (0:02:00)" in progress.eta_text()
    progress.update("phase:stories", 3)
    assert "none answered yet" in progress.eta_text() and "0:02:00 left" in progress.eta_text()
