"""Issue 45's snags of the dashboard in a real browser (Playwright, Debian's Chromium, `logwarden ui`
over a store the real pipeline filled, as tests/ui/test_ui_browser.py starts it): the incidents page
counts them all and pages past 500; an incident's timeline reads times of day, not `.500`; a SigmaHQ
rule is named by its title; the records queue starts high enough to show a screenful of rows; a
record's page says which model made it (item 3)."""

from __future__ import annotations

import pytest
from _store_helpers import BASE_TS, make_record
from _ui_helpers import fill_store
from test_ui_browser import (  # noqa: F401 - the browser fixtures of the UI tests
    browser,
    outside_requests,
    page,
    settle,
    ui_server,
)

from logwarden.schemas.incident import Incident

pytestmark = pytest.mark.browser

MANY = 520  # more than one page of the incidents list (500)
QUEUE = 40
MIN_ROWS_ON_SCREEN = 15  # at the browser fixture's 1400x1000: 8 before the filters moved to the sidebar, 17 after
SIGMA_ID, SIGMA_TITLE = "953d460b-f810-420a-97a2-cfca4c98e602", "Source Code Enumeration Detection by Keyword"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui_snags")
    url, store = fill_store(folder)
    burst = [make_record(source="/var/log/secure", line_start=n, line_end=n, first_ts=BASE_TS, last_ts=BASE_TS,
                         host="db-7") for n in (1, 2, 3)]  # one burst: the same second
    store.upsert_records([*burst, make_record(source="/var/log/nginx/access.log", host="web-sigma", line_start=5,
                                              line_end=5, detections=[SIGMA_ID], category="reconnaissance"),
                         *(make_record(source="/var/log/queue.log", host=f"q-{n}", line_start=100 + n, line_end=100 + n)
                           for n in range(QUEUE))])  # more than a screenful for the records queue
    store.remember_rules({SIGMA_ID: SIGMA_TITLE})  # as a run with `--sigma` SigmaHQ saves its rules' titles
    store.incidents.replace(old=[], incidents=[
        Incident(id="inc-burst0000000001", title="one second on db-7", risk_level="critical", category="brute_force",
                 first_ts=BASE_TS, last_ts=BASE_TS, hosts=["db-7"], record_ids=[r.id for r in burst]),
        *(Incident(id=f"inc-many{n:012d}", title=f"many {n}", risk_level="medium", category="reconnaissance",
                   first_ts=BASE_TS, last_ts=BASE_TS, hosts=[f"h{n}"]) for n in range(MANY))])
    try:
        with ui_server(url, folder) as (base, log):
            yield base, store, folder
    finally:
        store.close()


def test_the_incidents_page_counts_them_all_and_pages_past_500(server, page):
    """Issue 45: the page stopped at 500 with no total."""
    base, store, _ = server
    total = len(store.incidents.query(limit=10**6))
    assert total > MANY
    page.goto(f"{base}/incidents")
    page.get_by_role("heading", name="Incidents").wait_for()
    settle(page)
    page.get_by_text(f"{total:,} incidents · 1–500 shown, page 1 of 2").wait_for()
    page.get_by_role("spinbutton", name="Page").fill("2")
    page.keyboard.press("Enter")
    page.get_by_text(f"{total:,} incidents · 501–{total:,} shown, page 2 of 2").wait_for()
    settle(page)
    assert outside_requests(page, base) == []


def test_a_burst_in_one_second_has_a_readable_time_axis(server, page):
    """Issue 45: records of one second made Vega's axis a second wide, its ticks `.500 .500`."""
    base, _, _ = server
    page.goto(f"{base}/incident?id=inc-burst0000000001")
    page.get_by_text("Timeline per host").wait_for()
    chart = page.locator("[data-testid='stVegaLiteChart']").first
    chart.wait_for()
    settle(page)
    labels = page.evaluate("""() => [...document.querySelectorAll("[data-testid='stVegaLiteChart'] svg text")]
                                    .map(t => t.textContent)""")
    assert "first event (UTC)" in labels, labels
    ticks = [t for t in labels if t[:1].isdigit() or t.startswith(".")]
    assert ticks and not any(t.startswith(".") for t in ticks), ticks
    assert any(t.startswith("10:0") or t.startswith("09:5") for t in ticks), ticks  # times of day around 10:00


def test_a_sigmahq_rule_is_named_by_its_title(server, page):
    """Issue 45: a rule given with `--sigma` (not in the settings' packs) showed its UUID."""
    base, store, _ = server
    [record] = [r for r in store.query_records(limit=1000) if SIGMA_ID in r.detections]
    page.goto(f"{base}/record?id={record.id[:12]}")
    page.get_by_text("Rules that fired").wait_for()
    settle(page)
    page.get_by_text(f"{SIGMA_TITLE} — {SIGMA_ID}").wait_for()  # the title, the id beside it


def test_the_records_table_names_a_sigmahq_rule_by_its_title(server, monkeypatch):
    """The queue's grid is drawn on a canvas (no text in the page to read): its rows as Streamlit builds them."""
    from _ui_helpers import APP
    from streamlit.testing.v1 import AppTest

    _, _, folder = server
    monkeypatch.setenv("LOGWARDEN_DB", f"sqlite:///{folder / 'ui.db'}")
    monkeypatch.delenv("LOGWARDEN_UI_PASSWORD", raising=False)
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.query_params.update(host="web-sigma")
    at.switch_page("views/records.py").run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(d.value for d in at.dataframe if "rules" in d.value.columns)
    assert list(table["rules"]) == [SIGMA_TITLE]


def test_the_records_queue_shows_a_screenful_of_rows(server, page):
    """Issue 45: the filters above the queue left 8 rows of a 50-row page on screen. The grid is a canvas:
    its rows on screen are the visible part of its box, in Streamlit's 35 px rows, less the header."""
    base, store, _ = server
    assert len(store.query_records(limit=100)) >= QUEUE
    page.goto(f"{base}/records")
    page.get_by_role("heading", name="Records").wait_for()
    grid = page.locator("[data-testid='stDataFrame']").first
    grid.wait_for()
    settle(page)
    box, height = grid.bounding_box(), page.viewport_size["height"]
    on_screen = int((min(box["y"] + box["height"], height) - box["y"]) // 35) - 1
    assert on_screen >= MIN_ROWS_ON_SCREEN, (box, height)
    page.get_by_role("combobox", name="Minimum risk", exact=True).wait_for()  # the filters are still there


def test_a_record_page_says_which_model_made_it(server, page):
    """Issue 45 item 3: every record showed `adapter: None`; a rules record says no model made it."""
    base, store, _ = server
    record = store.query_records(limit=1)[0]
    page.goto(f"{base}/record?id={record.id[:12]}")
    page.get_by_text("model: none (decided by the rules)").wait_for()
