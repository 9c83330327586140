"""Stopping during model work, and progress that counts the model's work (issue 31, items 8 and 9;
the ETA's arithmetic is tested in tests/cli/test_progress.py).

The engine is a stand-in that holds every batch until it is cancelled (the real llama.cpp engine's
cancellation has its own test in tests/engine/test_engine_llamacpp_model.py); what is under test is
the pipeline around it: `cancel()` ends the wait, what was read is committed, the prompts not
answered wait for review (the next `--resume` answers them), the run is `stopped`."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from _fake_engine import FakeEngine
from _log_fixtures import write_logs

from logwarden.app.pipeline import Pipeline
from logwarden.app.run_options import RunOptions
from logwarden.app.store import RecordFilter, open_store
from logwarden.errors import RunStopped

GOOD = ('{"findings":[{"evidence":["T1"],"anomaly":"30 failed logins then a root login from 203.0.113.7",'
        '"category":"brute_force","techniques":["T1110.001"],"risk_level":"critical"}],"recommendation":"Block it."}')
WAIT_S = 120  # the stand-in's longest hold: far above any stop, so a stop that does not cancel fails the test


@pytest.fixture()
def logs(tmp_path: Path) -> tuple[Path, str]:
    write_logs(tmp_path / "logs")
    return tmp_path / "logs" / "auth.log", f"sqlite:///{tmp_path / 'lw.db'}"


def test_cancel_during_generation_commits_what_was_done_and_leaves_the_rest_for_resume(logs):
    path, url = logs
    store = open_store(url)
    engine = FakeEngine(GOOD, hold=True, hold_s=WAIT_S)
    pipeline = Pipeline(store, engine, RunOptions(llm_policy="signals"))
    outcome: dict = {}

    def run():
        try:
            pipeline.analyze([path])
        except RunStopped as exc:
            outcome["stopped"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    assert engine.generating.wait(WAIT_S)
    pipeline.cancel()
    worker.join(WAIT_S)
    assert not worker.is_alive() and "stopped" in outcome  # the held batch did not have to finish
    assert store.list_runs()[0].status == "stopped"
    # what the rules made was stored as the lines were read; no cancelled answer became a record
    ingested = store.query_records(RecordFilter(run_id=pipeline.run_id), limit=100)
    assert ingested and all(r.decided_by == "rules" for r in ingested)
    assert store.get_source(str(path), path.stat().st_ino) is not None  # the file was read to its end
    assert store.count_reviews() >= 1  # the prompt it stopped waits for review
    assert not store.list_errors()  # a stop is not an engine failure

    resumed = Pipeline(store, FakeEngine(GOOD), RunOptions(llm_policy="signals", resume=True))
    metrics = resumed.analyze([path])
    assert metrics.lines == 0 and store.count_reviews() == 0  # nothing read twice, the waiting prompt answered
    assert any(r.decided_by == "rules+llm" for r in store.query_records(RecordFilter(), limit=100))


def test_cancel_rules_only_stops_at_the_next_window(logs):
    path, url = logs
    pipeline = Pipeline(open_store(url), None, RunOptions(rules_only=True))
    pipeline.cancel()
    with pytest.raises(RunStopped):
        pipeline.analyze([path])
    assert pipeline.store.list_runs()[0].status == "stopped"


def test_progress_reports_prompts_queued_and_done_and_tokens(logs):
    path, url = logs
    events: list[tuple[str, int]] = []
    metrics = Pipeline(open_store(url), FakeEngine(GOOD), RunOptions(llm_policy="signals"),
                       progress=lambda name, n: events.append((name, n))).analyze([path.parent])
    total = {name: sum(n for e, n in events if e == name) for name in ("llm_queued", "llm_done", "new_tokens")}
    assert total["llm_queued"] == total["llm_done"] == metrics.llm_calls > 0
    assert total["new_tokens"] == metrics.usage.new_tokens
    first_done = next(i for i, (name, _) in enumerate(events) if name == "llm_done")
    assert any(name == "llm_queued" for name, _ in events[:first_done])  # queued before answered
