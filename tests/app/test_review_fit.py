"""analyze's review fits the model's answer to its window as triage does (issue 45): on a backend
that takes no grammar an sshd window's `web_attack` finding is set aside and a technique of another
tactic is left out. The engine is a scripted stand-in answering what the 0.5B answered."""

from pathlib import Path

from _fake_engine import NOTHING, FakeEngine
from _log_fixtures import write_logs

from logwarden.app.pipeline import Pipeline, RunOptions
from logwarden.app.store import RecordFilter, open_store

# T1 of the auth.log window is its most frequent template: the 30 failed passwords
MISFIT = ('{"findings":[{"evidence":["T1"],"anomaly":"30 failed logins then a root login from 203.0.113.7",'
          '"category":"brute_force","techniques":["T1110.001","T1190"],"risk_level":"critical"},'
          '{"evidence":["T1"],"anomaly":"An injection attempt against the login page from 203.0.113.7",'
          '"category":"web_attack","techniques":["T1190"],"risk_level":"high"}],"recommendation":"Block 203.0.113.7."}')


def test_a_web_attack_on_sshd_lines_is_set_aside_and_an_unfit_technique_left_out(tmp_path: Path):
    write_logs(tmp_path / "logs")
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    engine = FakeEngine(lambda request: MISFIT if "sshd" in request.user else NOTHING)
    Pipeline(store, engine, RunOptions(llm_policy="signals")).analyze([tmp_path / "logs" / "auth.log"])
    records = store.query_records(RecordFilter(), limit=100)
    assert engine.requests and not [r for r in records if r.category == "web_attack"]
    [brute] = [r for r in records if r.category == "brute_force" and r.decided_by == "rules+llm"]
    assert brute.risk_level == "critical" and "T1190" not in {t.id for t in brute.techniques}
