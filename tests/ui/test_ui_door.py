"""The dashboard serves only its own origin (issue 43 item 6). `logwarden ui` is started for real,
without a password, in a folder whose `.streamlit/config.toml` turns Streamlit's protections off and
its agent API on; then it is reached as a DNS-rebinding page reaches it (a real Chromium that
resolves evil.example to 127.0.0.1), with a foreign Origin, without the token, and through records
and rule titles that carry remote images and bare URLs.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import httpx
import pytest
from _store_helpers import make_record
from _ui_helpers import fill_store
from test_ui_browser import CHROMIUM, CHROMIUM_ARGS, WAIT_MS, printed_token, settle, ui_server
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

pytestmark = pytest.mark.browser

EVIL = "evil.example"
# Every switch a working-folder config could flip to open the dashboard to other pages.
HOSTILE_CONFIG = """\
[server]
enableCORS = false
enableXsrfProtection = false
enableAgentApi = true
allowedHosts = ["*"]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ui_door")
    url, store = fill_store(folder)
    (folder / ".streamlit").mkdir()
    (folder / ".streamlit" / "config.toml").write_text(HOSTILE_CONFIG, encoding="utf-8")
    try:
        with ui_server(url, folder) as (base, log):
            yield base, store, folder, int(base.rsplit(":", 1)[1]), printed_token(log)
    finally:
        store.close()


@pytest.fixture(scope="module")
def browser():
    """Chromium for which evil.example is 127.0.0.1: what a rebinding DNS answer makes of it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=[*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {EVIL} 127.0.0.1"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.requested = []
    page.on("request", lambda request: page.requested.append(request.url))
    yield page
    context.close()


def cookie_of(server) -> dict[str, str]:
    port, token = server[3], server[4]
    return {f"logwarden_ui_{port}": token or ""}


def stream(port: int, *, host: str = "127.0.0.1", origin: str | None = None, cookie: dict[str, str] | None = None):
    """Open Streamlit's WebSocket over a plain TCP connection to 127.0.0.1, naming `host`."""
    headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in (cookie or {}).items())} if cookie else None
    return connect(f"ws://{host}:{port}/_stcore/stream", sock=socket.create_connection(("127.0.0.1", port)),
                   origin=origin, additional_headers=headers, subprotocols=["streamlit"], open_timeout=30)


def refused(port: int, **kwargs) -> bool:
    try:
        stream(port, **kwargs).close()
    except InvalidStatus as exc:
        return exc.response.status_code == 403
    return False


WS_OPENS = """url => new Promise(done => {
  const ws = new WebSocket(url, ["streamlit"]);
  ws.onopen = () => { ws.close(); done("open"); };
  ws.onerror = () => done("refused");
  setTimeout(() => done("no answer"), 20000);
})"""


def test_a_rebinding_page_gets_nothing_while_the_printed_url_works(server, page):
    base, store, _, port, token = server
    # even with the token in hand, a page whose name merely resolves here is refused
    answer = page.goto(f"http://{EVIL}:{port}/?token={token or ''}")
    assert answer is not None and answer.status == 403
    assert page.get_by_test_id("stApp").count() == 0
    assert page.evaluate(WS_OPENS, f"ws://{EVIL}:{port}/_stcore/stream") == "refused"
    assert page.evaluate(f"fetch('http://{EVIL}:{port}/_stcore/health').then(r => r.status)") == 403

    assert token, "no password is set: `logwarden ui` must print a URL with a token"
    page.goto(f"{base}/?token={token}")  # what the analyst opens
    page.get_by_role("heading", name="Overview").wait_for()
    settle(page)
    assert "token=" not in page.url  # traded for a cookie: not left in the address bar or history
    card = page.get_by_test_id("stMetric").filter(has=page.get_by_text("Records", exact=True)).first
    assert card.get_by_test_id("stMetricValue").inner_text().strip() == f"{store.count_records():,}"
    assert page.evaluate(WS_OPENS, f"ws://127.0.0.1:{port}/_stcore/stream") == "open"


def test_without_the_token_nothing_is_served(server):
    base, port = server[0], server[3]
    for path in ("/", "/records", "/_stcore/health", "/_stcore/host-config"):
        assert httpx.get(base + path).status_code == 403
    assert httpx.get(f"{base}/", params={"token": "a-guess"}).status_code == 403
    assert refused(port)
    with stream(port, cookie=cookie_of(server), origin=base):
        pass  # the cookie opens the stream


def test_a_foreign_host_or_origin_is_refused_even_with_the_cookie(server):
    base, port = server[0], server[3]
    cookie = cookie_of(server)
    assert httpx.get(f"{base}/_stcore/health", cookies=cookie).text == "ok"
    assert httpx.get(f"{base}/_stcore/health", cookies=cookie, headers={"Host": f"{EVIL}:{port}"}).status_code == 403
    for origin in (f"http://{EVIL}:{port}", "http://127.0.0.1:1", "null"):
        assert httpx.get(f"{base}/_stcore/health", cookies=cookie, headers={"Origin": origin}).status_code == 403
        assert refused(port, cookie=cookie, origin=origin)
    assert refused(port, host=EVIL, cookie=cookie, origin=f"http://{EVIL}:{port}")


def test_a_streamlit_config_in_the_working_folder_is_not_read(server):
    base, cookie = server[0], cookie_of(server)
    health = httpx.get(f"{base}/_stcore/health", cookies=cookie)
    assert health.status_code == 200 and "access-control-allow-origin" not in health.headers  # enableCORS stays on
    agent = httpx.get(f"{base}/_stcore/agent/openapi.json", cookies=cookie)
    assert "the API is switched off" in agent.text
    assert httpx.post(f"{base}/_stcore/agent/interact", cookies=cookie, json={}).status_code == 403
    assert "frame-ancestors 'none'" in health.headers["content-security-policy"]


def test_no_remote_image_or_link_from_a_record_or_a_rule_title(server, page):
    """A rule's title (here an unknown rule id, shown as its title) with a markdown image, and bare
    URLs and an address in the model's and the log's text: shown as text, nothing fetched."""
    base, store, _, port, token = server
    pixel = f"http://{EVIL}:{port}/pixel.png"
    record = make_record(source="/var/log/remote.log", line_start=1, line_end=1, risk_level="high",
                         anomaly=f"GET {pixel} from root@{EVIL} via www.{EVIL}",
                         trace=f"see https://{EVIL}/x and ![p]({pixel})",
                         detections=[f"![rule]({pixel})", f"[click](http://{EVIL}/)"])
    store.upsert_records([record])
    page.goto(f"{base}/?token={token}")
    page.get_by_role("heading", name="Overview").wait_for()
    page.goto(f"{base}/record?id={record.id}")
    page.get_by_text(f"root@{EVIL}", exact=False).first.wait_for()
    page.get_by_text("Rules that fired").wait_for()
    settle(page)
    page.wait_for_timeout(500)  # give an image a chance to load
    assert page.locator(f"img[src*='{EVIL}']").count() == 0
    assert page.locator(f"a[href*='{EVIL}']").count() == 0
    assert [url for url in page.requested if EVIL in url] == []
    assert page.get_by_text(f"![rule]({pixel})", exact=False).count() > 0  # the rule's label, as text
