"""The incident page in a real browser (Playwright, Debian's Chromium) over sample_logs analysed
rules-only (which groups incidents), the biggest incident given a story through the same checks a
model's story goes through (a scripted engine: the browser test does not wait on the real model;
tests/app/incidents/test_story_model.py runs that). Checks the story, the timeline per host, the
tactics strip and that a record link opens the record.

LOGWARDEN_UPDATE_SCREENSHOTS=1 also refreshes docs/screenshots/incident.png.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _fake_engine import FakeEngine
from _ui_helpers import fill_store
from test_ui_browser import (  # noqa: F401 - the browser fixtures of the UI tests
    browser,
    keep_shot,
    outside_requests,
    page,
    settle,
    shoot,
    ui_server,
)

from logwarden.app.incidents.story import StoryWriter
from logwarden.app.review import Budget

pytestmark = pytest.mark.browser


def storyteller(incident) -> FakeEngine:
    """Writes a story from the records it is shown (their first host and address), citing them all."""
    host = incident.hosts[0]
    ip = incident.entities.get("ips", ["-"])[0]

    def reply(request):
        return {"title": f"Logins tried from {ip} on {host}",
                "summary": f"{ip} tried one account after another on {host}, and on the other hosts "
                           "below within the hour.", "stages": ["credential_access"],
                "next_steps": [f"Block {ip}.", f"Check the accounts {ip} reached on {host}."],
                "cited": request.schema["properties"]["cited"]["items"]["enum"]}

    return FakeEngine(reply, model_name="scripted-story")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("incident_browser")
    url, store = fill_store(folder, with_samples=True)
    incident = max(store.incidents.query(limit=1000), key=lambda i: (len(i.hosts), len(i.record_ids), i.id))
    written = StoryWriter(store, storyteller(incident), budget=Budget()).write([incident], limit=1)
    assert written.written == 1
    try:
        with ui_server(url, folder) as (base, log):
            yield base, store, folder, store.incidents.get(incident.id)
    finally:
        store.close()


def test_the_incident_page_shows_story_timeline_tactics_and_links_records(server, page):
    base, store, folder, incident = server
    members = store.incidents.members(incident.id)
    page.goto(f"{base}/incident?id={incident.id}")
    settle(page)
    page.get_by_text(incident.title, exact=True).first.wait_for(state="visible")  # waits for a condition
    page.get_by_text(incident.summary.split(". ")[0], exact=False).first.wait_for(state="visible")
    page.locator("[data-testid='stVegaLiteChart']").first.wait_for(state="visible")  # the timeline chart renders
    for host in incident.hosts:  # a timeline section per host
        page.get_by_text(host, exact=True).first.wait_for(state="visible")
    page.locator(".lw-tactic[data-lit='true']").first.wait_for(state="visible")
    lit = page.locator(".lw-tactic[data-lit='true']").all_inner_texts()
    assert lit and set(lit) <= set(incident.tactics)
    links = page.locator("a[href*='record?id=']")
    links.nth(len(members) - 1).wait_for(state="attached")
    assert links.count() == len(members)
    page.set_viewport_size({"width": 1400, "height": 2200})  # the page scrolls inside Streamlit's container
    settle(page)
    path = shoot(page, folder, "incident")
    keep_shot(path, "incident")
    first = members[0]
    href = page.locator(f"a[href*='record?id={first.id[:12]}']").first.get_attribute("href")
    page.goto(href if href.startswith("http") else f"{base}/{href.lstrip('/')}")
    settle(page)
    page.get_by_role("heading", name="Record detail").first.wait_for(state="visible")
    page.get_by_text(first.id, exact=False).first.wait_for(state="visible")
    assert outside_requests(page, base) == []


def test_the_incidents_list_links_to_the_incident_page(server, page):
    base, _, _, incident = server
    page.goto(f"{base}/incidents")
    settle(page)
    page.get_by_role("heading", name="Incidents").first.wait_for(state="visible")
    page.locator("[data-testid='stDataFrame']").first.wait_for(state="visible")
