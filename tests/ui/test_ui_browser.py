"""The audit UI in a real browser: Debian's Chromium driven by Playwright against `logwarden ui`
started as a subprocess on a free loopback port, over a store filled by the real pipeline.

Set LOGWARDEN_UPDATE_SCREENSHOTS=1 to also refresh docs/screenshots/ (overview, the records queue,
a record, the HTML report; kept out of ordinary runs so that tests do not rewrite tracked files).
Every page load records the requests the page makes: none may go to a host other than the app's.
Each page first opens the URL with the access token that `logwarden ui` printed (its cookie then
lets the browser in; tests/ui/test_ui_door.py checks who else is kept out).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from _ui_helpers import REPO, fill_store, hostile_records

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
DOC_SHOTS = REPO / "docs" / "screenshots"
WAIT_MS = 60_000  # generous: a shared 2-core machine; these are waits for a condition, not timings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def printed_url(log: Path) -> str | None:
    """The URL `logwarden ui` told the analyst to open (with its token, when no password is set)."""
    found = re.search(r"logwarden ui on (http://\S+)", log.read_text())
    return found.group(1) if found else None


def printed_token(log: Path) -> str | None:
    found = re.search(r"[?&]token=([\w-]+)", printed_url(log) or "")
    return found.group(1) if found else None


def wait_healthy(base: str, process: subprocess.Popen, log: Path, deadline_s: float = 120) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"logwarden ui exited with {process.returncode}:\n{log.read_text()}")
        token = printed_token(log)
        try:
            if printed_url(log) and httpx.get(f"{base}/_stcore/health", params={"token": token} if token else None,
                                              timeout=2, follow_redirects=True).text == "ok":
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"logwarden ui did not answer within {deadline_s}s:\n{log.read_text()}")


@contextmanager
def ui_server(url: str, folder: Path) -> Iterator[tuple[str, Path]]:
    """`logwarden ui` over `url` on a free loopback port, started in `folder` without a password (so
    with a printed token): (its base URL, its log) once it answers; stopped on exit."""
    port, log = free_port(), folder / "server.log"
    env = {k: v for k, v in os.environ.items() if k != "LOGWARDEN_UI_PASSWORD"}
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-m", "logwarden.cli.commands.ui", "--db", url, "--port", str(port)],
                                   stdout=out, stderr=subprocess.STDOUT, env=env, cwd=folder)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, process, log)
        yield base, log
    finally:
        process.terminate()  # `logwarden ui` passes SIGTERM on to Streamlit
        process.wait(timeout=30)


def sign_in(page, base: str, log: Path) -> None:
    """Open the printed URL's token once (on a light path: no script run), as the analyst does."""
    token = printed_token(log)
    if token:
        page.goto(f"{base}/_stcore/health?token={token}")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui_browser")
    url, store = fill_store(folder, with_samples=True)
    try:
        with ui_server(url, folder) as (base, log):
            yield base, store, folder
    finally:
        store.close()


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium under Playwright, for every browser test (their `page` fixtures ask for it)."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (the CI set-up does this)")

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, server):
    """A signed-in page of a module's `server` (a tuple: base URL first, the folder of server.log third)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    sign_in(page, server[0], server[2] / "server.log")
    page.dialogs = []
    page.requested = []
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    page.on("request", lambda request: page.requested.append(request.url))
    yield page
    context.close()


def outside_requests(page, base: str) -> list[str]:
    """Requests to anything but the app's own origin (data: and blob: URLs are in the page)."""
    return [url for url in page.requested if not url.startswith((base + "/", "data:", "blob:"))]


def keep_shot(path: Path, name: str) -> None:
    if os.environ.get("LOGWARDEN_UPDATE_SCREENSHOTS"):
        DOC_SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOC_SHOTS / f"{name}.png")


def click_row(page, row: int, column_x: int = 80) -> None:
    """Click a cell of the records table (a canvas grid: rows are ~35 px under a ~35 px header).
    A rerun may replace the grid while it is looked up: then look again."""
    from playwright.sync_api import Error as PlaywrightError

    for _ in range(5):
        settle(page)
        grid = page.locator("[data-testid='stDataFrame']").first
        try:
            grid.scroll_into_view_if_needed()
            box = grid.bounding_box()
        except PlaywrightError:
            continue
        page.mouse.click(box["x"] + column_x, box["y"] + 35 + 35 * row + 17)
        return
    pytest.fail("the records table kept changing")


def select_rows(page, count: int) -> None:
    """Tick the first `count` row markers of the bulk table, one at a time, each checked by the
    "N selected" line. A click that lands while a rerun replaces the grid is lost, so it is made
    again; a click is never repeated once it counted (a second one would untick the row)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for row in range(count):
        for _ in range(4):
            click_row(page, row, column_x=15)  # the row markers
            try:
                page.get_by_text(f"{row + 1} selected", exact=True).wait_for(timeout=15_000)
                break
            except PlaywrightTimeout:
                settle(page)
                page.get_by_text(f"{row} selected", exact=True).wait_for()  # lost, not miscounted
        else:
            pytest.fail(f"row {row} would not be selected")


def settle(page) -> None:
    """Wait until Streamlit has finished the script run (no 'running' indicator)."""
    page.wait_for_load_state("networkidle")
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=WAIT_MS)


def choose(page, label: str, option: str, attempts: int = 5) -> None:
    """Pick `option` in the selectbox `label`. A rerun that lands while the list is open closes it,
    so open it again until the option shows."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    settle(page)
    for _ in range(attempts):
        page.get_by_role("combobox", name=label, exact=True).click()
        try:
            page.get_by_role("option", name=option, exact=True).click(timeout=5_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    else:
        pytest.fail(f"could not choose {option!r} in {label!r}")
    settle(page)


def shoot(page, folder: Path, name: str, *, full_page: bool = True) -> Path:
    path = folder / "screenshots" / f"{name}.png"
    path.parent.mkdir(exist_ok=True)
    page.screenshot(path=str(path), full_page=full_page)
    return path


def metric_value(page, label: str) -> str:
    card = page.get_by_test_id("stMetric").filter(has=page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True))
    return card.get_by_test_id("stMetricValue").inner_text().strip()


def test_overview_filter_open_review(server, page):
    base, store, folder = server
    page.goto(f"{base}/")
    page.get_by_role("heading", name="Overview").wait_for()
    page.locator("[data-testid='stVegaLiteChart']").first.wait_for()
    settle(page)
    assert metric_value(page, "Records") == f"{store.count_records():,}"
    overview = shoot(page, folder, "overview")
    assert overview.stat().st_size < 500_000
    keep_shot(overview, "overview")

    page.get_by_role("link", name="Records").click()
    page.get_by_role("heading", name="Records").wait_for()
    settle(page)
    total = store.count_records()
    page.get_by_text(f"{total:,} matching records").wait_for()
    choose(page, "Minimum risk", "high")
    high = store.count_records(store_filter(min_risk="high"))
    assert 0 < high < total
    page.get_by_text(f"{high:,} matching records").wait_for()
    assert "risk=high" in page.url  # the filter is in the URL: a reload or a shared link keeps it
    records = shoot(page, folder, "records", full_page=False)
    keep_shot(records, "records")

    click_row(page, 0)  # a click on a row opens its record
    page.get_by_role("heading", name="Record detail").wait_for()
    settle(page)
    shown = page.url.split("id=")[1]
    record = store.get_record(shown)  # the 12-character id the table shows is enough
    assert record is not None and record.risk_level in ("high", "critical") and len(shown) == 12
    page.get_by_text(record.evidence.exemplars[0].text[:40], exact=False).first.wait_for()
    detail = shoot(page, folder, "record", full_page=False)
    keep_shot(detail, "record")

    choose(page, "Status", "closed (benign_positive)")  # issue 42: a SOC state with its close reason
    page.get_by_label("Analyst note").fill("checked in the browser")
    page.get_by_role("button", name="Save review").click()
    page.get_by_text("Review saved: closed (benign_positive)").wait_for()
    settle(page)
    # issue 31 item 1: a second note, status untouched, must not reset it to `open`
    page.get_by_label("Analyst note").fill("a second note")
    page.get_by_role("button", name="Save review").click()
    deadline = time.monotonic() + WAIT_MS / 1000
    while len(store.list_reviews(record.id)) < 2 and time.monotonic() < deadline:
        page.wait_for_timeout(200)  # the first save's "Review saved" is still on the page: wait for the row
    settle(page)
    assert [(r.old_status, r.status, r.close_reason, r.note) for r in store.list_reviews(record.id)] == [
        ("open", "closed", "benign_positive", "checked in the browser"),
        ("closed", "closed", "benign_positive", "a second note")]
    assert "closed (benign_positive)" in metric_value(page, "Status")
    # the form shows the status saved, not a reset one
    assert page.get_by_role("combobox", name="Status", exact=True).input_value() == "closed (benign_positive)"
    assert page.dialogs == []
    assert outside_requests(page, base) == []


def test_bulk_review_and_the_grouped_view(server, page):
    base, store, folder = server
    page.goto(f"{base}/records?category=brute_force")
    page.get_by_role("heading", name="Records").wait_for()
    settle(page)
    brute = store.query_records(store_filter(categories=("brute_force",)), order_by="risk_score", limit=2)
    page.get_by_text("Select several to review at once").click()
    settle(page)
    select_rows(page, 2)
    page.get_by_role("button", name="Close: false positive").click()
    page.get_by_text("2 record(s) marked closed (false_positive)").wait_for()
    marked = [r for r in store.query_records(store_filter(categories=("brute_force",)), limit=100)
              if (r.status, r.close_reason) == ("closed", "false_positive")]
    assert len(marked) == 2 and {r.id for r in marked} <= {r.id for r in store.query_records(limit=1000)}
    assert all((store.list_reviews(r.id)[-1].old_status, store.list_reviews(r.id)[-1].status) == ("open", "closed")
               for r in marked)
    assert len(brute) == 2

    page.goto(f"{base}/records?view=By+host")
    page.get_by_text("hosts over").wait_for()
    settle(page)
    assert outside_requests(page, base) == []


def test_the_page_fetches_nothing_from_another_host_and_shows_the_cjk_headings(server, page):
    base, store, _ = server
    record = store.query_records(limit=1)[0]
    for path in ("", "records", f"record?id={record.id[:12]}", "triage", "runs", "export"):
        page.goto(f"{base}/{path}")
        page.locator("h1").first.wait_for()
        settle(page)
    assert page.requested and outside_requests(page, base) == []
    page.goto(f"{base}/record?id={record.id[:12]}")
    page.get_by_text("异常").first.wait_for()
    settle(page)
    assert page.evaluate("document.fonts.check('16px logwarden-cjk', '异常溯源建议')")
    assert page.evaluate("() => [...document.fonts].some(f => f.family.includes('logwarden-cjk') "
                         "&& f.status === 'loaded')")


def test_the_html_report_is_self_contained(server, page, tmp_path):
    from click.testing import CliRunner

    from logwarden.cli.main import main as cli

    _, store, folder = server
    out = tmp_path / "report.html"
    url = f"sqlite:///{folder / 'ui.db'}"
    result = CliRunner().invoke(cli, ["report", "--html", str(out), "--db", url])
    assert result.exit_code == 0, result.output
    page.goto(out.as_uri())
    page.get_by_role("heading", name="logwarden report").wait_for()
    assert page.locator("details").count() == store.count_records()
    assert [u for u in page.requested if not u.startswith(("file:", "data:"))] == []
    assert page.evaluate("async () => (await document.fonts.load('16px logwarden-cjk', '异常')).length") == 1
    report = shoot(page, folder, "report", full_page=False)  # the top: summary and charts
    keep_shot(report, "report")
    page.locator("details summary").first.click()  # a record opened, as a reader would
    page.get_by_text("Recommendation").first.wait_for()
    assert page.dialogs == [] and page.locator("script").count() == 0


def test_other_pages_render(server, page):
    base, _, folder = server
    for path, heading in (("triage", "Triage"), ("runs", "Runs & sources"), ("export", "Export")):
        page.goto(f"{base}/{path}")
        page.get_by_role("heading", name=heading).wait_for()
        settle(page)
        assert page.get_by_test_id("stException").count() == 0
        shoot(page, folder, path)


def test_hostile_records_inject_nothing(server, page):
    base, store, folder = server
    store.upsert_records(hostile_records())
    hostile = hostile_records()[0]
    for path in ("", "records", f"record?id={hostile.id}"):
        page.goto(f"{base}/{path}")
        page.locator("h1").first.wait_for()
        page.get_by_role("button", name="Refresh data").click()  # the overview caches for a few seconds
        settle(page)
        if path.startswith("record?"):
            page.get_by_text("ANOMALY-XSS-0", exact=False).first.wait_for()
        page.wait_for_timeout(500)  # give an injected onerror a chance to fire
        assert page.dialogs == []
        assert page.locator("img[src='x']").count() == 0
        assert page.locator("script", has_text="alert").count() == 0
        assert page.locator("a[href^='javascript']").count() == 0
        shoot(page, folder, "hostile-" + (path.split("?")[0] or "overview"))
    assert page.get_by_text("<script>alert(1)</script>", exact=False).count() > 0  # shown as text


def store_filter(**kwargs):
    from logwarden.app.store import RecordFilter

    return RecordFilter(**kwargs)
