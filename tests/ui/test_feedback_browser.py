"""Feedback on the model's text in a real browser (issue 42 item 3): Playwright and Debian's Chromium
against `logwarden ui` over a store with a record the model co-decided; the analyst picks a reason,
writes a note and clicks Reject, and the store holds that judgement, tied to the text shown."""

from __future__ import annotations

import time

import pytest
from _store_helpers import make_record
from _ui_helpers import fill_store
from test_ui_browser import (  # noqa: F401 - the browser fixtures of the UI tests
    WAIT_MS,
    browser,
    choose,
    outside_requests,
    page,
    settle,
    ui_server,
)

from logwarden.app.store.feedback import record_judged, sha256

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("feedback_browser")
    url, store = fill_store(folder)
    store.upsert_records([make_record(source="/var/log/model.log")])
    try:
        with ui_server(url, folder) as (base, log):
            yield base, store, folder
    finally:
        store.close()


def test_reject_the_model_text_of_a_record(server, page):
    base, store, _ = server
    record = make_record(source="/var/log/model.log")
    page.goto(f"{base}/record?id={record.id[:12]}")
    page.get_by_role("heading", name="Record detail").wait_for()
    page.get_by_text("Was the model right?").wait_for()
    choose(page, "Reason to reject", "wrong_severity")
    page.get_by_label("Note (optional)").fill("20 tries from one address: medium")
    page.get_by_role("button", name="Reject", exact=True).click()
    page.get_by_text("Feedback saved: rejected (wrong_severity).").wait_for()
    deadline = time.monotonic() + WAIT_MS / 1000
    while not store.list_feedback("record", record.id) and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    settle(page)
    [row] = store.list_feedback("record", record.id)
    assert (row.verdict, row.reason, row.note) == ("reject", "wrong_severity", "20 tries from one address: medium")
    assert row.judged_sha256 == sha256(record_judged(store.get_record(record.id)))
    assert page.dialogs == [] and outside_requests(page, base) == []
