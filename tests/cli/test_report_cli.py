"""`logwarden report --html` as a hand-over (issue 45, item 6), from a real store that `analyze
--rules-only` filled from sample_logs, read back with an HTML parser: every incident with its story,
next steps and a timeline linking its records; every record linking to its incident (or saying it
is an alert on its own); top rules and hosts; evidence capped as the report says; and a time
filter that empties it says the stored range."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from _html import Element, parse_html
from _repo import SAMPLE_LOGS
from click.testing import CliRunner

from logwarden.app.store import open_store
from logwarden.cli.main import main as cli
from logwarden.ui.report import EVIDENCE_LINES, LINE_CHARS

STORY = "The attacker's address reached a web shell, then ran a reverse shell."
STEPS = ["Isolate web01 from the network", "Collect the web root and the shell's process tree"]


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('report') / 'lw.db'}"
    done = run("analyze", str(SAMPLE_LOGS), "--rules-only", "--db", url)
    assert done.exit_code == 0, done.output
    store = open_store(url)
    chained = next(i for i in store.incidents.query(limit=10**6) if len(i.record_ids) >= 2)
    store.incidents.set_story(chained.model_copy(update={
        "summary": STORY, "next_steps": STEPS, "stages": ["initial_access", "execution"], "story_by": "llm"}))
    store.close()
    return url


@pytest.fixture(scope="module")
def page(db, tmp_path_factory) -> Element:
    out = tmp_path_factory.mktemp("html") / "report.html"
    result = run("report", "--html", str(out), "--db", db)
    assert result.exit_code == 0, result.output
    return parse_html(out.read_text(encoding="utf-8"))


def test_every_incident_has_a_section_with_its_story_and_a_timeline_of_its_records(db, page):
    incidents = open_store(db, readonly=True).incidents.query(limit=10**6)
    sections = page.find_all("section", class_="incident")
    assert {s.attrs["id"] for s in sections} == {f"i-{i.id}" for i in incidents}
    for incident in incidents:
        section = page.by_id(f"i-{incident.id}")
        assert incident.title in section.text()
        assert set(section.hrefs()) == {f"#r-{r}" for r in incident.record_ids}
        times = [row.find_all("td")[0].text() for row in section.find_all("tr")[1:]]
        assert times == sorted(times) and len(times) == len(incident.record_ids)  # a timeline: in time order
    storied = next(s for s in sections if STORY in s.text())
    assert [li.text() for li in storied.find_all("li")] == STEPS
    assert "initial access → execution" in storied.text()
    assert sum(STORY in s.text() for s in sections) == 1  # the rules' incidents carry no invented story


def test_every_record_links_to_its_incident_or_says_it_is_an_alert_on_its_own(db, page):
    store = open_store(db, readonly=True)
    records = store.query_records(limit=10**6)
    incident_of = store.incidents.of_records(r.id for r in records)
    details = page.find_all("details")
    assert {d.attrs["id"] for d in details} == {f"r-{r.id}" for r in records}
    for record in records:
        summary = page.by_id(f"r-{record.id}").find_all("summary")[0]
        if record.id in incident_of:
            assert summary.hrefs() == [f"#i-{incident_of[record.id]}"]
        else:
            assert summary.hrefs() == [] and "an alert on its own" in summary.text()
    ids = {e.attrs["id"] for e in page.iter() if e.attrs.get("id")}
    for href in page.hrefs():
        assert href.startswith("#") and href[1:] in ids, href  # self-contained, and no link goes nowhere


def test_top_rules_and_top_hosts_count_the_records(db, page):
    records = open_store(db, readonly=True).query_records(limit=10**6)
    expected = {"Top rules": Counter(rule for r in records for rule in set(r.detections)),
                "Top hosts": Counter(host for r in records for host in set(r.hosts))}
    for heading, counts in expected.items():
        rows = _table_after(page, heading).find_all("tr")[1:]
        shown = {row.find_all("td")[0].text(): int(row.find_all("td")[1].text()) for row in rows}
        assert shown and all(counts[name] == n for name, n in shown.items())
        assert max(shown.values()) == max(counts.values())
    hosts = {row.find_all("td")[0].text() for row in _table_after(page, "Top hosts").find_all("tr")[1:]}
    assert "web01" in hosts


def test_evidence_is_capped_per_record_and_the_report_says_so(db, page):
    records = {r.id: r for r in open_store(db, readonly=True).query_records(limit=10**6)}
    assert f"first {EVIDENCE_LINES} evidence lines" in page.text()
    longer = 0
    for details in page.find_all("details"):
        record = records[details.attrs["id"][2:]]
        lines = details.find_all("pre")
        assert len(lines) == min(EVIDENCE_LINES, len(record.evidence.exemplars))
        for shown in lines:
            assert len(shown.text()) <= 9 + LINE_CHARS + len("… (1,000,000 more characters)")
        if len(record.evidence.exemplars) > EVIDENCE_LINES:
            longer += 1
            assert f"{EVIDENCE_LINES} of {len(record.evidence.exemplars)} evidence lines shown" in details.text()
    assert longer  # sample_logs has records with more evidence than the cap


def test_a_time_filter_that_empties_the_report_says_the_stored_range(db, tmp_path):
    result = run("report", "--html", str(tmp_path / "r.html"), "--since", "24h", "--db", db)
    assert result.exit_code == 0, result.output
    said = " ".join(result.stderr.split())
    assert "wrote 0 records" in said and "from 2024-03-10" in said and "the logs' own" in said


def _table_after(page: Element, heading: str) -> Element:
    """The table that follows the h3 whose text starts with `heading`."""
    h3 = next(h for h in page.find_all("h3") if re.match(re.escape(heading), h.text()))
    siblings = [c for c in h3.parent.children if isinstance(c, Element)]
    return next(e for e in siblings[siblings.index(h3) + 1:] if e.tag == "table")
