"""`logwarden feedback record|story|triage ID --accept|--reject` and `feedback list` (issue 42 item 3),
on real SQLite stores: `triage` with a model keeps its answer and prints the id to judge; a record's
and a story's model judgement accepted or rejected and listed; the rules' judgements, unknown ids,
a missing verdict or a reason of the other verdict are usage errors (exit 2); `list` creates nothing."""

from __future__ import annotations

import json

import pytest
from _fake_engine import FakeEngine
from _store_helpers import make_record
from click.testing import CliRunner

from logwarden.app import backends
from logwarden.app.store import open_store
from logwarden.cli.main import main
from logwarden.schemas.incident import Incident

LINES = "\n".join(f"Mar 11 02:14:{i:02d} web-01 sshd[{2211 + i}]: Failed password for root from 203.0.113.45 "
                  f"port {40000 + i} ssh2" for i in range(12))
ANSWER = {"findings": [{"evidence": ["L1"], "anomaly": "Twelve failed root logins from 203.0.113.45.",
                        "category": "brute_force", "techniques": ["T1110"], "risk_level": "high"}],
          "recommendation": "Block 203.0.113.45."}


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input)


@pytest.fixture()
def db(tmp_path):
    url = f"sqlite:///{tmp_path / 'lw.db'}"
    with open_store(url) as store:
        store.upsert_records([make_record(), make_record(line_start=50, line_end=60, decided_by="rules", model=None)])
        store.incidents.replace(old=[], incidents=[Incident(
            id="inc-00112233445566aa", title="brute force on bastion-1", summary="203.0.113.7 guessed root",
            story_by="llm", model="embedded", risk_level="high", category="brute_force",
            record_ids=[make_record().id])])
    return url


def test_triage_keeps_the_model_answer_and_feedback_judges_it(tmp_path, monkeypatch):
    monkeypatch.setattr(backends, "open_engine", lambda options: FakeEngine(ANSWER))
    url = f"sqlite:///{tmp_path / 't.db'}"
    triaged = run("triage", "--db", url, "--json", input=LINES + "\n")
    assert triaged.exit_code == 0, triaged.output
    report = json.loads(triaged.stdout)
    answer_id = report["triage_id"]
    assert answer_id.startswith("tri-") and report["verdict"] == "high"
    text = run("triage", "--db", url, input=LINES + "\n")
    assert f"logwarden feedback triage {answer_id}" in text.stdout  # the same answer: the same id, printed
    judged = run("feedback", "triage", answer_id[:10], "--reject", "--reason", "wrong_severity", "--note",
                 "a dozen tries is medium", "--reviewer", "ana", "--db", url, "--json")
    assert judged.exit_code == 0, judged.output
    row = json.loads(judged.stdout)
    assert (row["target_id"], row["verdict"], row["reason"], row["reviewer"]) == (
        answer_id, "reject", "wrong_severity", "ana")
    assert json.loads(row["judged"]) == ANSWER and row["context"] == LINES + "\n"  # the snippet as given
    listed = json.loads(run("feedback", "list", "--kind", "triage", "--db", url, "--json").stdout)
    assert [r["id"] for r in listed] == [row["id"]]


def test_rules_only_triage_keeps_no_answer(tmp_path):
    url = f"sqlite:///{tmp_path / 't.db'}"
    report = json.loads(run("triage", "--rules-only", "--db", url, "--json", input=LINES + "\n").stdout)
    assert report["triage_id"] is None
    with open_store(url) as store:
        assert store.info()["tables"]["triage_answers"] == 0


def test_a_record_and_a_story_accepted_and_rejected_then_listed(db):
    record_id = make_record().id
    accepted = run("feedback", "record", record_id[:12], "--accept", "--db", db)
    assert accepted.exit_code == 0, accepted.output
    assert f"record {record_id}: accepted (correct)" in accepted.stderr
    rejected = run("feedback", "story", "00112233", "--reject", "--reason", "hallucinated", "--db", db, "--json")
    assert rejected.exit_code == 0, rejected.output
    assert json.loads(rejected.stdout)["target_id"] == "inc-00112233445566aa"
    listed = run("feedback", "list", "--db", db)
    assert listed.exit_code == 0
    rows = [line.split("\t") for line in listed.stdout.splitlines()]
    assert [(r[1], r[2], r[3], r[4]) for r in rows] == [("story", "inc-00112233445566aa", "reject", "hallucinated"),
                                                         ("record", record_id, "accept", "correct")]
    only = json.loads(run("feedback", "list", "--id", record_id, "--json", "--db", db).stdout)
    assert [r["kind"] for r in only] == ["record"]


@pytest.mark.parametrize(("args", "message"), [
    (("record", "RULES", "--reject", "--reason", "wrong_category"), "decided by the rules alone"),
    (("record", "nope", "--accept"), "No record 'nope'"),
    (("story", "nope", "--accept"), "No incident 'nope'"),
    (("triage", "nope", "--accept"), "No triage answer 'nope'"),
    (("record", "MODEL"), "give --accept or --reject"),
    (("record", "MODEL", "--reject"), "A reject needs a reason"),
    (("record", "MODEL", "--accept", "--reason", "hallucinated"), "not a reason to accept"),
    (("record", "MODEL", "--accept", "--reason", "made_up"), "Invalid value for '--reason'"),
])
def test_what_cannot_be_judged_is_a_usage_error(db, args, message):
    ids = {"RULES": make_record(line_start=50, line_end=60).id, "MODEL": make_record().id}
    result = run("feedback", *(ids.get(a, a) for a in args), "--db", db)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.stderr.split()) and "Traceback" not in result.output
    with open_store(db) as store:
        assert store.list_feedback() == []


def test_list_on_a_missing_store_creates_nothing(tmp_path):
    missing = tmp_path / "none.db"
    result = run("feedback", "list", "--db", str(missing))
    assert result.exit_code == 2 and not missing.exists()
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    open_store(empty).close()
    result = run("feedback", "list", "--db", empty)
    assert result.exit_code == 0 and result.stdout == "" and "no feedback yet" in result.stderr


def test_help_names_the_reasons():
    for args in (("feedback", "--help"), ("feedback", "record", "--help"), ("feedback", "list", "--help")):
        result = run(*args)
        assert result.exit_code == 0, result.output
    assert "wrong_severity" in run("feedback", "record", "--help").stdout
