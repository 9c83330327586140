"""Engine faults never lose a window: the rules' records are stored before the model is asked; a
failed answer is retried alone, then its review is marked failed with the error shown; repeated
failures open the circuit breaker and the rest waits for review. The engine here is a scripted
stand-in (the code under test is the review around it; the real engine has its own tests)."""

from pathlib import Path

import pytest
from _fake_engine import NOTHING, FakeEngine
from _log_fixtures import write_logs

from logwarden.app.pipeline import Pipeline
from logwarden.app.review import BREAKER_FAILURES
from logwarden.app.run_options import RunOptions
from logwarden.app.store import RecordFilter, open_store
from logwarden.errors import ModelError

# T1 of the auth.log window is its most frequent template: the 30 failed passwords
GOOD = ('{"findings":[{"evidence":["T1"],"anomaly":"30 failed logins then a root login from 203.0.113.7",'
        '"category":"brute_force","techniques":["T1110.001"],"risk_level":"critical"}],"recommendation":"Block 203.0.113.7."}')


def scripted(*per_call) -> FakeEngine:
    """One step per generate() call (an answer for the sshd prompts, or an exception), then GOOD; the
    other windows (the access log) get "nothing abnormal"."""
    engine = FakeEngine()

    def reply(request):
        n = len(engine.calls) - 1
        step = per_call[n] if n < len(per_call) else GOOD
        return step if isinstance(step, BaseException) or "sshd" in request.user else NOTHING

    engine.script = reply
    return engine


@pytest.fixture()
def setup(tmp_path: Path):
    write_logs(tmp_path / "logs")
    return tmp_path / "logs" / "auth.log", open_store(f"sqlite:///{tmp_path / 'lw.db'}")


def analyze(store, engine, path):
    return Pipeline(store, engine, RunOptions(llm_policy="signals")).analyze([path])


def records(store):
    return store.query_records(RecordFilter(), limit=100)


def test_valid_answer_is_merged_and_can_raise(setup):
    path, store = setup
    metrics = analyze(store, scripted(GOOD), path)
    [brute] = [r for r in records(store) if r.category == "brute_force"]
    assert brute.decided_by == "rules+llm" and brute.risk_level == "critical"
    assert brute.engine_stats["new_tokens"] == FakeEngine().count_tokens(GOOD) and metrics.llm_calls == 1


@pytest.mark.parametrize("bad", ["", "not json", '{"findings": [{"anomaly": "1.0.0.0.0.0', '{"findings":"x"}'])
def test_invalid_output_falls_back_to_rules_with_the_error(setup, bad):
    path, store = setup
    metrics = analyze(store, scripted(bad, bad), path)
    brute = [r for r in records(store) if r.category == "brute_force"]
    assert brute and all(r.decided_by == "rules" for r in brute)
    assert brute[0].risk_level == "high"  # the rules' floor stands
    assert metrics.llm_failures >= 1 and store.count_reviews(status="failed") == 1
    assert any(e.stage == "engine" for e in store.list_errors())


@pytest.mark.parametrize("exc", [ModelError("model missing"), RuntimeError("CUDA out of memory"), TimeoutError("slow")])
def test_engine_exceptions_never_lose_the_window(setup, exc):
    path, store = setup
    metrics = analyze(store, scripted(exc, exc), path)
    assert [r.category for r in records(store) if r.decided_by == "rules"]
    windows = store.list_windows(source=str(path))
    assert sum(w.line_count for w in windows) == metrics.lines


def test_breaker_opens_after_repeated_failures(tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(BREAKER_FAILURES + 3):  # one window per file, each with a rule hit
        (folder / f"auth{i}.log").write_text("".join(
            f"Mar  1 10:00:{j:02d} web01 sshd[{j}]: Failed password for root from 203.0.113.{i} port {j} ssh2\n"
            for j in range(12)))
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    engine = scripted(*[RuntimeError("boom")] * 100)
    metrics = Pipeline(store, engine, RunOptions(llm_policy="signals", max_batch=1)).analyze([folder])
    assert metrics.breaker_open
    assert len(engine.calls) == BREAKER_FAILURES  # nothing more was sent once the breaker opened
    assert metrics.records == BREAKER_FAILURES + 3  # every window still got its rules-only record
    assert metrics.reviews_pending == 3  # what the breaker stopped waits for `review --pending`
