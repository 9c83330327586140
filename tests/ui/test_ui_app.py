"""Every UI page under Streamlit's AppTest, against a real SQLite store filled by the real
pipeline (rules-only) from real auth.log / access.log lines."""

from __future__ import annotations

import re
import shutil
from datetime import timedelta

import pytest
from _store_helpers import BASE_TS, make_record
from _ui_helpers import (
    APP,
    APP_TIMEOUT,
    FIXTURE_LINES,
    SAMPLES,
    XSS_IMG,
    XSS_LINK,
    XSS_SCRIPT,
    XSS_URL,
    fill_store,
    hostile_records,
    open_app_page,
)
from streamlit.testing.v1 import AppTest

from logwarden.app.events import ErrorRow
from logwarden.app.pipeline import Pipeline
from logwarden.app.run_options import RunOptions


@pytest.fixture
def ui(tmp_path, monkeypatch):
    """(store, url, AppTest factory) for a freshly analysed store; LOGWARDEN_DB points the app at it."""
    url, store = fill_store(tmp_path)
    monkeypatch.setenv("LOGWARDEN_DB", url)
    monkeypatch.delenv("LOGWARDEN_UI_PASSWORD", raising=False)

    yield store, url, open_app_page
    store.close()


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def frame(at: AppTest, column: str):
    """The first dataframe on the page that has `column` (AppTest does not expose dataframe keys)."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def records_table(at: AppTest):
    return frame(at, "anomaly")


def table_ids(at: AppTest) -> list[str]:
    return list(records_table(at)["id"])


def test_overview_shows_kpis_charts_and_techniques(ui):
    store, _, open_page = ui
    at = open_page()
    assert [t.value for t in at.title] == ["Overview"]
    assert metric(at, "Records") == str(store.count_records())
    assert metric(at, "High") == str(store.counts_by_level()["high"])
    assert metric(at, "Lines analysed") == str(FIXTURE_LINES)
    assert len(at.get("vega_lite_chart")) == 3  # risk over time, categories, top values of one kind
    techniques = frame(at, "tactic")
    assert "T1110.001" in set(techniques["technique"])
    assert set(techniques["link"].dropna()) <= {f"https://attack.mitre.org/techniques/{t.replace('.', '/')}/"
                                                for t in techniques["technique"]}


def test_top_chart_switches_indicator_kind(ui):
    _, _, open_page = ui
    at = open_page()
    assert "203.0.113.7" in at.get("vega_lite_chart")[2].proto.spec + str(at.get("vega_lite_chart")[2].proto.datasets)
    at.get("button_group")[1].set_value("users").run()
    top = str(at.get("vega_lite_chart")[2].proto.datasets)
    assert "root" in top and "203.0.113.7" not in top


def test_sidebar_source_picker_filters_the_overview(ui):
    store, _, open_page = ui
    at = open_page()
    access = next(path for path in at.multiselect(key="scope_sources").options if path.endswith("access.log"))
    at.multiselect(key="scope_sources").select(access).run()
    assert not at.exception
    assert metric(at, "Records") == str(sum(r.source == access for r in store.query_records(limit=100)))
    assert metric(at, "Sources") == "1"


def test_sidebar_time_range_excludes_old_records(ui):
    _, _, open_page = ui
    at = open_page()
    at.selectbox(key="scope_preset").select("Last hour").run()  # fixture logs are from 2026-11-29
    assert metric(at, "Records") == "0"
    assert any("No records in this scope" in i.value for i in at.info)


def test_records_filters_change_the_table(ui):
    store, _, open_page = ui
    at = open_page("records")
    everything = table_ids(at)
    assert len(everything) == store.count_records() >= 3
    at.selectbox(key="rec_min_risk").select("high").run()
    high = table_ids(at)
    assert 0 < len(high) < len(everything)
    at.selectbox(key="rec_min_risk").select("any").run()
    at.text_input(key="rec_technique").input("T1110").run()
    brute = records_table(at)
    assert set(brute["category"]) == {"brute_force"}
    at.text_input(key="rec_technique").input("").run()
    at.multiselect(key="rec_categories").select("web_attack").run()
    assert set(records_table(at)["category"]) == {"web_attack"}
    at.multiselect(key="rec_categories").unselect("web_attack").run()
    at.text_input(key="rec_text").input("203.0.113.7").run()
    assert set(records_table(at)["source"]) == {s for s in {r.source for r in store.query_records(limit=100)}
                                                                      if s.endswith("auth.log")}


def test_records_sort_and_paginate_in_sql(ui):
    store, _, open_page = ui
    store.upsert_records([make_record(line_start=100 + i, line_end=100 + i, risk_level="low",
                                      last_ts=BASE_TS + timedelta(minutes=i)) for i in range(60)])
    at = open_page("records")
    total = store.count_records()
    assert f"{total:,} matching records · page 1 of 2" in at.caption[0].value
    first = table_ids(at)
    at.number_input(key="rec_page").set_value(2).run()
    second = table_ids(at)
    assert len(first) == 50 and len(second) == total - 50 and not set(first) & set(second)
    at.selectbox(key="rec_sort").select("Risk").run()
    assert at.number_input(key="rec_page").value == 2  # sorting keeps the page; filters reset it
    at.toggle(key="rec_desc").set_value(False).run()
    at.number_input(key="rec_page").set_value(1).run()
    assert list(records_table(at)["risk"])[:3] == ["low"] * 3
    at.selectbox(key="rec_min_risk").select("medium").run()
    assert at.number_input(key="rec_page").value == 1


def test_records_filters_come_from_and_go_to_the_url(ui):
    store, _, open_page = ui
    at = open_page("records", risk="high", category="brute_force,web_attack", view="Queue")
    assert at.selectbox(key="rec_min_risk").value == "high"
    assert set(records_table(at)["risk"]) <= {"high", "critical"}
    assert set(records_table(at)["category"]) <= {"brute_force", "web_attack"}
    at.text_input(key="rec_host").input("bastion").run()
    assert at.query_params["host"] == "bastion" and at.query_params["risk"] == "high"
    assert set(records_table(at)["host"]) == {"bastion-1"}


def test_records_grouped_by_host_and_address(ui):
    store, _, open_page = ui
    at = open_page("records", view="By host")
    hosts = frame(at, "host")
    assert "bastion-1" in set(hosts["host"])
    row = hosts[hosts["host"] == "bastion-1"].iloc[0]
    assert row["records"] == sum("bastion-1" in r.hosts for r in store.query_records(limit=500))
    at = open_page("records", view="By address")
    assert "203.0.113.7" in set(frame(at, "address")["address"])


def test_record_detail_shows_evidence_context_and_links(ui):
    store, _, open_page = ui
    brute = next(r for r in store.query_records(limit=100) if r.category == "brute_force")
    at = open_page("record", id=brute.id)
    assert metric(at, "Category") == "brute_force"
    code = "\n".join(c.value for c in at.code)
    assert "Failed password for root from 203.0.113.7" in code
    assert re.search(r"^>\s+1  Nov 29 10:00:01", code, re.M)  # context read from the file, evidence marked
    links = " ".join(m.value for m in at.markdown)
    assert "(https://attack.mitre.org/techniques/T1110/001/)" in links
    assert "203.0.113.7" in set(frame(at, "kind")["value"])  # indicators


def save_button(at):
    """The review form's submit button (the page has others: Explain, accept/mute)."""
    return next(b for b in at.button if b.label == "Save review")


def test_review_appends_to_the_audit_trail(ui):
    store, _, open_page = ui
    record = store.query_records(limit=1)[0]
    at = open_page("record", id=record.id)
    key = f"_{record.id}"
    at.selectbox(key="review_status" + key).select("acknowledged")
    at.text_area(key="review_note" + key).input("seen on the firewall too")
    at.text_input(key="review_reviewer" + key).input("ana")
    save_button(at).click().run()
    assert [s.value for s in at.success] == ["Review saved: acknowledged"]
    at.selectbox(key="review_status" + key).select("closed (true_positive)")
    save_button(at).click().run()
    history = store.list_reviews(record.id)
    assert [(h.old_status, h.status, h.close_reason, h.note, h.reviewer) for h in history] == [
        ("open", "acknowledged", None, "seen on the firewall too", "ana"),
        ("acknowledged", "closed", "true_positive", None, "ana")]
    assert (store.get_record(record.id).status, store.get_record(record.id).close_reason) == ("closed", "true_positive")
    assert list(frame(at, "reviewer")["status"]) == ["acknowledged", "closed (true_positive)"]
    assert metric(at, "Status") == "closed (true_positive)"


def test_a_second_note_keeps_the_status_and_the_form_shows_it(ui):
    """Issue 31 item 1: a note saved on a reviewed record wrote the first state (the form had reset)."""
    store, _, open_page = ui
    record = store.query_records(limit=1)[0]
    at = open_page("record", id=record.id[:12])  # the id as the tables print it
    key = f"_{record.id}"
    at.selectbox(key="review_status" + key).select("in_progress")
    at.text_area(key="review_note" + key).input("first note")
    save_button(at).click().run()
    assert at.selectbox(key="review_status" + key).value == "in_progress"
    assert at.text_area(key="review_note" + key).value == ""
    at.text_area(key="review_note" + key).input("second note, nothing else changed")
    save_button(at).click().run()
    assert [(h.status, h.note) for h in store.list_reviews(record.id)] == [
        ("in_progress", "first note"), ("in_progress", "second note, nothing else changed")]
    assert at.selectbox(key="review_status" + key).value == "in_progress"


def test_unknown_record_id_is_an_error_message_not_a_crash(ui):
    _, _, open_page = ui
    at = open_page("record", id="[x](javascript:alert(1))")
    assert "No record with id" in at.error[0].value and "](javascript" not in at.error[0].value


def test_triage_rules_only_streams_nothing_and_stores_records(ui):
    store, _, open_page = ui
    at = open_page("triage")
    assert at.toggle(key="triage_use_model").value is False
    snippet = "\n".join(f"Nov 29 12:00:{i:02d} web-1 sshd[9{i}]: Failed password for root from 192.0.2.99 port 4{i:03d} ssh2"
                        for i in range(10))
    at.text_area(key="triage_text").input(snippet)
    at.button(key="triage_assess").click().run()
    assert not at.exception
    assert at.json and "brute_force" in " ".join(m.value for m in at.markdown)
    before = store.count_records()
    at.button(key="triage_store").click().run()
    assert store.count_records() > before
    stored = [r for r in store.query_records(limit=200) if r.source.startswith("triage:")]
    assert stored and stored[0].category == "brute_force" and "192.0.2.99" in stored[0].indicators.ips


def test_triage_rules_only_benign_says_no_model_was_asked(ui):
    """Issue 45: a rules-only benign verdict said "the model found nothing" though no model ran."""
    _, _, open_page = ui
    at = open_page("triage")
    at.text_area(key="triage_text").input("Nov 29 12:00:00 web-1 CRON[1]: (root) CMD (run-parts /etc/cron.hourly)")
    at.button(key="triage_assess").click().run()
    assert [m.value.replace("\\", "") for m in at.success] == ["Benign: rules only: no rule fired; no model was asked."]


def test_runs_and_sources_page_shows_metrics_lag_and_errors(ui, tmp_path):
    store, _, open_page = ui
    auth = tmp_path / "logs" / "auth.log"
    with auth.open("a") as fh:
        fh.write("Nov 29 10:30:00 bastion-1 sshd[999]: Connection closed by 192.0.2.1 port 22 [preauth]\n")
    store.add_errors([ErrorRow(source=str(tmp_path / "logs" / "broken.gz"), offset=0, stage="ingest",
                               message="not a gzip file")])
    rotated = tmp_path / "logs" / "access.log.2.gz"
    shutil.copyfile(SAMPLES / "access.log.2.gz", rotated)
    Pipeline(store, None, RunOptions(rules_only=True)).analyze([rotated])
    at = open_page("runs")
    runs = frame(at, "compression_ratio")
    assert runs["lines"].iloc[-1] == FIXTURE_LINES and runs["status"].iloc[-1] == "ok"  # the first run, under the .gz one
    sources = frame(at, "lag_bytes").set_index("path")
    assert sources.loc[str(auth), "lag_bytes"] > 0
    assert sources.loc[str(tmp_path / "logs" / "access.log"), "lag_bytes"] == 0
    assert sources.loc[str(rotated), "lag_bytes"] == 0  # issue 31: was −116,325 (compressed size − content offset)
    assert "not a gzip file" in set(frame(at, "stage")["message"])


def test_export_page_offers_the_five_formats(ui):
    store, url, open_page = ui
    at = open_page("export")
    buttons = at.get("download_button")
    assert len(buttons) == 5 and not any(b.proto.disabled for b in buttons)
    from logwarden.ui import data
    from logwarden.ui.scope import scoped

    key = data.filter_key(scoped(min_risk="high"))
    cef = data.export_text(url, key, "cef").splitlines()
    assert len(cef) == store.count_records(scoped(min_risk="high")) and all(line.startswith("CEF:0|") for line in cef)
    csv_text = data.records_csv(url, data.filter_key(scoped()))
    assert csv_text.count("\n") == store.count_records() + 1


def test_hostile_record_content_never_becomes_markup(ui):
    store, _, open_page = ui
    store.upsert_records(hostile_records())
    hostile = store.query_records(limit=1, order_by="risk")[0]
    pages = [open_page(), open_page("records"), open_page("record", id=hostile.id), open_page("export")]
    for at in pages:
        assert not at.exception
        for m in at.markdown:
            assert not m.proto.allow_html
            for raw in (XSS_SCRIPT, XSS_IMG, XSS_LINK, XSS_URL, "](javascript"):
                assert raw not in m.value, m.value
    detail = pages[2]
    assert any(XSS_SCRIPT in c.value for c in at_code(detail))  # shown, as text, in code blocks
    assert "ANOMALY\\-XSS\\-" in " ".join(m.value for m in detail.markdown)


def at_code(at: AppTest):
    return list(at.code)


def test_password_gate(ui, monkeypatch):
    _, _, _ = ui
    monkeypatch.setenv("LOGWARDEN_UI_PASSWORD", "correct horse")
    at = AppTest.from_file(str(APP), default_timeout=APP_TIMEOUT).run()
    assert not at.title or [t.value for t in at.title] == ["logwarden"]
    assert not at.metric and not at.dataframe
    at.text_input(key="lw_password").input("wrong").run()
    assert "Wrong password" in at.error[0].value and not at.metric
    at.text_input(key="lw_password").input("correct horse").run()
    assert [t.value for t in at.title] == ["Overview"] and at.metric


def test_record_detail_says_what_the_model_pointed_at_and_what_was_removed(ui):
    from logwarden.schemas import Evidence

    store, _, open_page = ui
    record = make_record(source="/var/log/model.log", decided_by="llm", ungrounded=["203.0.113.99", "7"],
                         evidence=Evidence(line_numbers=[3, 4], refs=["T2", "L4"]))
    store.upsert_records([record])
    at = open_page("record", id=record.id)
    captions = " ".join(c.value for c in at.caption).replace("\\", "")  # markdown-escaped on the page
    assert "the model pointed at T2, L4" in captions
    assert "not in the digest it was shown: 203.0.113.99, 7" in captions
