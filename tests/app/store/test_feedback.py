"""Feedback on the model's judgements (issue 42 item 3), on SQLite and a real PostgreSQL: accept and
reject a record's, a story's and a triage answer's text, read back; the text judged stays with its
row when the model rewrites it; the rules' judgements and unknown ids are refused; step 21 on a store
made at step 20 keeps what was there."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from _store_helpers import make_record
from sqlalchemy import insert

from logwarden.app.store import Store, migrations, open_store
from logwarden.app.store.database import make_engine
from logwarden.app.store.feedback import record_judged, sha256
from logwarden.errors import InputError, StoreInputError
from logwarden.schemas.incident import Incident

SNIPPET = "Nov 29 10:00:01 bastion-1 sshd[811]: Failed password for root from 203.0.113.7 port 50122 ssh2"
ANSWER = '{"findings": [{"category": "brute_force", "risk_level": "low"}]}'


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'logwarden.db'}"
    return request.getfixturevalue("pg_cluster").create_database()


@pytest.fixture()
def store(db_url):
    with open_store(db_url) as s:
        yield s


def _story(store, story_by="llm") -> Incident:
    record = make_record()
    store.upsert_records([record])
    incident = Incident(id="inc-00112233445566aa", title="brute force on bastion-1", summary="203.0.113.7 guessed root",
                        stages=["Credential Access"], next_steps=["Block 203.0.113.7"], story_by=story_by,
                        model="embedded", risk_level="high", category="brute_force", record_ids=[record.id])
    store.incidents.replace(old=[], incidents=[incident])
    return incident


def test_a_record_accepted_and_rejected_reads_back_with_its_text_and_lines(store):
    record = make_record()
    store.upsert_records([record])
    accepted = store.add_feedback("record", record.id[:12], verdict="accept", reviewer="ana")
    rejected = store.add_feedback("record", record.id, verdict="reject", reason="wrong_severity",
                                  note="one address, 20 tries: medium", reviewer="bo")
    assert accepted.reason == "correct" and accepted.target_id == record.id  # a prefix resolved to the id
    got = store.list_feedback("record", record.id)
    assert [(f.verdict, f.reason, f.note, f.reviewer) for f in got] == [
        ("reject", "wrong_severity", "one address, 20 tries: medium", "bo"), ("accept", "correct", None, "ana")]
    assert got[0].id == rejected.id and got[0].created_at.tzinfo is not None
    judged = json.loads(got[0].judged)
    assert judged["risk_level"] == "high" and judged["anomaly"] == record.anomaly
    assert got[0].judged_sha256 == sha256(record_judged(record)) and got[0].model == "embedded"
    assert "Failed password for root from 203.0.113.7" in got[0].context


def test_feedback_stays_with_the_text_it_judged_when_the_model_rewrites_it(store):
    record = make_record()
    store.upsert_records([record])
    first = store.add_feedback("record", record.id, verdict="reject", reason="hallucinated")
    rewritten = record.model_copy(update={"anomaly": "A new answer of the model, naming nothing it invented."})
    store.upsert_records([rewritten])
    second = store.add_feedback("record", record.id, verdict="accept")
    rows = {f.id: f for f in store.list_feedback(target_id=record.id)}
    assert rows[first.id].judged_sha256 == sha256(record_judged(record)) != rows[second.id].judged_sha256
    assert json.loads(rows[first.id].judged)["anomaly"] == record.anomaly
    assert rows[second.id].judged_sha256 == sha256(record_judged(store.get_record(record.id)))


def test_a_story_and_a_triage_answer_get_feedback(store):
    incident = _story(store)
    story = store.add_feedback("story", incident.id.removeprefix("inc-")[:8], verdict="reject", reason="unhelpful")
    assert story.target_id == incident.id and json.loads(story.judged)["next_steps"] == ["Block 203.0.113.7"]
    answer_id = store.add_triage_answer(snippet=SNIPPET, answer=ANSWER, verdict="low", model="embedded",
                                        record_ids=["r1"])
    assert store.add_triage_answer(snippet=SNIPPET, answer=ANSWER, verdict="low") == answer_id  # kept once
    triage = store.add_feedback("triage", answer_id[4:10], verdict="reject", reason="wrong_severity")
    assert (triage.target_id, triage.judged, triage.context) == (answer_id, ANSWER, SNIPPET)
    assert [f.kind for f in store.list_feedback()] == ["triage", "story"]
    assert [f.target_id for f in store.list_feedback("triage")] == [answer_id]
    assert len(store.list_feedback(limit=1)) == 1


def test_the_rules_judgements_unknown_ids_and_bad_reasons_are_refused(store):
    rules_record = make_record(decided_by="rules", model=None)
    store.upsert_records([rules_record])
    with pytest.raises(InputError, match="decided by the rules alone"):
        store.add_feedback("record", rules_record.id, verdict="reject", reason="wrong_category")
    rules_story = _story(store, story_by="rules")
    with pytest.raises(InputError, match="no story by the model"):
        store.add_feedback("story", rules_story.id, verdict="accept")
    for kind, message in (("record", "No record"), ("story", "No incident"), ("triage", "No triage answer")):
        with pytest.raises(InputError, match=message):
            store.add_feedback(kind, "nope", verdict="accept")
    with pytest.raises(InputError, match="Feedback is on a record, story or triage"):
        store.add_feedback("window", "nope", verdict="accept")
    model_record = make_record(line_start=40, line_end=41)
    store.upsert_records([model_record])
    for verdict, reason, message in (("reject", None, "A reject needs a reason"),
                                     ("accept", "hallucinated", "not a reason to accept"),
                                     ("reject", "correct", "not a reason to reject"),
                                     ("maybe", None, "accept or reject")):
        with pytest.raises(InputError, match=message):
            store.add_feedback("record", model_record.id, verdict=verdict, reason=reason)
    assert store.list_feedback() == []


def test_step_21_on_a_store_at_20_keeps_its_records_and_takes_feedback(db_url):
    engine = make_engine(db_url)
    with engine.begin() as conn:
        migrations._versions.create_all(conn)
        for version, name, step in migrations.STEPS:
            if version <= 20:
                step(conn)
                conn.execute(insert(migrations._schema_migrations).values(
                    version=version, name=name, applied_at=datetime(2026, 12, 1)))
    record = make_record()
    Store(engine).upsert_records([record])  # written as a logwarden at step 20 wrote it
    engine.dispose()
    with pytest.raises(StoreInputError, match="lacking this logwarden's step"):
        open_store(db_url, readonly=True)
    with open_store(db_url) as store:
        assert store.applied == [21] and store.get_record(record.id) == record
        assert store.add_feedback("record", record.id, verdict="accept").reason == "correct"
        assert store.info()["tables"]["model_feedback"] == 1
