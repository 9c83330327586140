"""Feedback on the model's judgements in the dashboard (issue 42 item 3), through Streamlit's AppTest over
a real SQLite store: the record page (the model's verdict and text), the incident page (the model's
story) and the triage page (the model's answer, with a scripted engine) accept or reject, and the
store holds it; the rules' judgements get no form; a read-only dashboard offers none.
(tests/ui/test_feedback_browser.py clicks one in a real browser.)"""

from __future__ import annotations

import json

import pytest
from _fake_engine import FakeEngine
from _store_helpers import make_record
from _ui_helpers import fill_store, open_app_page
from streamlit.testing.v1 import AppTest

from logwarden.schemas.incident import Incident
from logwarden.ui import model

SNIPPET = "\n".join(f"Nov 29 12:00:{i:02d} web-1 sshd[9{i}]: Failed password for root from 192.0.2.99 port 4{i:03d} ssh2"
                    for i in range(10))
ANSWER = {"findings": [{"evidence": ["L1"], "anomaly": "Ten failed root logins from 192.0.2.99.",
                        "category": "brute_force", "techniques": ["T1110"], "risk_level": "critical"}],
          "recommendation": "Block 192.0.2.99."}


@pytest.fixture
def ui(tmp_path, monkeypatch):
    url, store = fill_store(tmp_path)
    model_record = make_record(source="/var/log/model.log")
    store.upsert_records([model_record])
    store.incidents.replace(old=[], incidents=[Incident(
        id="inc-00112233445566aa", title="brute force on bastion-1", summary="203.0.113.7 guessed root passwords.",
        next_steps=["Block 203.0.113.7."], story_by="llm", model="embedded", risk_level="high", category="brute_force",
        record_ids=[model_record.id])])
    monkeypatch.setenv("LOGWARDEN_DB", url)
    monkeypatch.delenv("LOGWARDEN_UI_PASSWORD", raising=False)

    yield store, model_record, open_app_page
    store.close()


def labels(at: AppTest) -> list[str]:
    return [b.label for b in at.button]


def test_the_record_page_rejects_the_model_text_with_a_reason(ui):
    store, record, open_page = ui
    at = open_page("record", id=record.id)
    key = f"record_{record.id}"
    at.selectbox(key=f"feedback_reason_{key}").select("hallucinated")
    at.text_input(key=f"feedback_note_{key}").input("bastion-2 is not in the lines")
    at.text_input(key=f"feedback_reviewer_{key}").input("ana")
    at.button(key=f"feedback_reject_{key}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    [row] = store.list_feedback("record", record.id)
    assert (row.verdict, row.reason, row.note, row.reviewer) == ("reject", "hallucinated", "bastion-2 is not in the lines",
                                                                 "ana")
    assert "Feedback saved: rejected (hallucinated)." in [s.value for s in at.success]
    shown = next(d.value for d in at.dataframe if "verdict" in d.value.columns)
    assert list(shown["on"]) == ["this text"] and list(shown["reason"]) == ["hallucinated"]


def test_a_rules_record_gets_no_form(ui):
    store, _, open_page = ui
    rules_record = next(r for r in store.query_records(limit=100) if r.decided_by == "rules")
    at = open_page("record", id=rules_record.id)
    assert "Accept" not in labels(at) and "Save review" in labels(at)


def test_the_incident_story_is_accepted(ui):
    store, _, open_page = ui
    at = open_page("incident", id="inc-00112233445566aa")
    at.button(key="feedback_accept_story_inc-00112233445566aa").click().run()
    assert not at.exception, [e.value for e in at.exception]
    [row] = store.list_feedback("story")
    assert (row.target_id, row.verdict, row.reason) == ("inc-00112233445566aa", "accept", "correct")
    assert json.loads(row.judged)["summary"] == "203.0.113.7 guessed root passwords."


def test_the_triage_answer_is_rejected_and_kept_with_its_snippet(ui, monkeypatch):
    store, _, open_page = ui
    monkeypatch.setattr(model, "get_engine", lambda: FakeEngine(ANSWER, model_name="scripted"))
    at = open_page("triage")
    at.text_area(key="triage_text").input(SNIPPET)
    at.toggle(key="triage_use_model").set_value(True)
    at.button(key="triage_assess").click().run()
    reject = next(b for b in at.button if b.label == "Reject")
    key = reject.key.removeprefix("feedback_reject_")
    at.selectbox(key=f"feedback_reason_{key}").select("wrong_severity")
    at.button(key=reject.key).click().run()
    assert not at.exception, [e.value for e in at.exception]
    [row] = store.list_feedback("triage")
    assert (row.verdict, row.reason, row.context, row.model) == ("reject", "wrong_severity", SNIPPET, "scripted")
    assert json.loads(row.judged) == ANSWER and row.target_id == key.removeprefix("triage_")


def test_the_rules_alone_in_triage_get_no_form(ui):
    _, _, open_page = ui
    at = open_page("triage")
    at.text_area(key="triage_text").input(SNIPPET)
    at.button(key="triage_assess").click().run()
    assert "Accept" not in labels(at) and any(b.key == "triage_store" for b in at.button)


def test_a_read_only_dashboard_offers_no_feedback(ui, monkeypatch):
    store, record, open_page = ui
    monkeypatch.setenv("LOGWARDEN_UI_READ_ONLY", "1")
    at = open_page("record", id=record.id)
    assert "Accept" not in labels(at) and "Read-only dashboard: feedback is off." in [c.value for c in at.caption]
