"""The incident pages under Streamlit's AppTest over a real store: the review form writes status,
owner and note; hostile record text in an incident never becomes markup."""

from __future__ import annotations

import pytest
from _ui_helpers import XSS_IMG, XSS_LINK, XSS_SCRIPT, XSS_URL, fill_store, hostile_records, open_app_page
from streamlit.testing.v1 import AppTest

from logwarden.app.incidents import IncidentOptions
from logwarden.app.incidents.regroup import regroup


@pytest.fixture
def ui(tmp_path, monkeypatch):
    url, store = fill_store(tmp_path)
    monkeypatch.setenv("LOGWARDEN_DB", url)
    monkeypatch.delenv("LOGWARDEN_UI_PASSWORD", raising=False)

    yield store, open_app_page
    store.close()


def test_the_incident_review_form_saves_status_owner_and_note_and_its_records_follow(ui):
    store, open_page = ui
    incident = store.incidents.query()[0]
    at = open_page("incident", id=incident.id)
    assert [h.value.replace("\\", "") for h in at.subheader][0] == incident.title
    at.selectbox(key=f"inc_review_status_{incident.id}").select("closed (duplicate)")
    at.text_input(key=f"inc_review_owner_{incident.id}").input("ana")
    at.text_area(key=f"inc_review_note_{incident.id}").input("escalated to IR")
    at.button[0].click().run()
    saved = store.incidents.get(incident.id)
    assert (saved.status, saved.close_reason, saved.owner, saved.analyst_note) == (
        "closed", "duplicate", "ana", "escalated to IR")
    assert [(r["old_status"], r["status"]) for r in store.incidents.reviews(incident.id)] == [("open", "closed")]
    n = len(incident.record_ids)
    assert [s.value for s in at.success] == [f"Review saved: closed (duplicate) ({n} record{'s' if n != 1 else ''} too)"]
    for record_id in incident.record_ids:
        assert [(h.status, h.close_reason, h.incident_id) for h in store.list_reviews(record_id)] == [
            ("closed", "duplicate", incident.id)]


def test_the_incidents_list_shows_every_incident(ui):
    store, open_page = ui
    at = open_page("incidents")
    at.selectbox(key="inc_min_risk").select("info").run()
    table = next(d.value for d in at.dataframe if "title" in d.value.columns)
    assert sorted(table["id"]) == sorted(i.id for i in store.incidents.query())


def test_hostile_record_text_in_an_incident_never_becomes_markup(ui):
    store, open_page = ui
    store.upsert_records(hostile_records())
    regroup(store, IncidentOptions())
    hostile = next(i for i in store.incidents.query(limit=1000) if XSS_IMG in i.hosts)
    at = open_page("incident", id=hostile.id)
    for m in at.markdown:
        assert not m.proto.allow_html
        for raw in (XSS_SCRIPT, XSS_IMG, XSS_LINK, XSS_URL, "](javascript"):
            assert raw not in m.value, m.value


def test_the_record_page_links_to_its_incident(ui):
    store, open_page = ui
    incident = store.incidents.query()[0]
    at = open_page("record", id=incident.record_ids[0][:12])
    assert any(f"(incident?id={incident.id})" in m.value for m in at.markdown)
