"""Issue 45, item 6: the HTML report of hostile logs and stories injects nothing. Log lines that try
to close the report's elements and open a script, records whose every field is markup, and an
incident whose model-written title, story and next steps are markup: parsed back, the report has no
script, image, frame or event handler, every link stays inside the file, and the attacker's text
reads as the text it was."""

from __future__ import annotations

from _html import parse_html
from _ui_helpers import XSS_IMG, XSS_SCRIPT, hostile_records
from click.testing import CliRunner

from logwarden.app.store import open_store
from logwarden.cli.main import main as cli
from logwarden.schemas.incident import Incident

BREAKOUT = "</pre></details></section></table><script>alert(2)</script><a href='https://evil.example/'>x</a>"
LINES = [f'203.0.113.66 - - [29/Nov/2026:11:0{i}:13 +0000] "GET /search?q={BREAKOUT}{XSS_IMG} HTTP/1.1" 404 162 '
         f'"-" "sqlmap/1.7.2#stable"' for i in range(6)]
ID = 'deadbeef"><script>alert(3)</script>'
STORY = f"{XSS_SCRIPT} then {BREAKOUT}"


def test_the_report_of_hostile_logs_and_stories_injects_nothing(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "access.log").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'lw.db'}"
    done = CliRunner().invoke(cli, ["analyze", str(logs), "--rules-only", "--db", url])
    assert done.exit_code == 0, done.output
    store = open_store(url)
    analysed = store.query_records(limit=100)
    assert analysed and any(BREAKOUT in line.text for r in analysed for line in r.evidence.exemplars)
    hostile = [r.model_copy(update={"id": f"{ID}{i}"}) for i, r in enumerate(hostile_records())]
    store.upsert_records(hostile)
    incident = Incident(id=f"inc-{ID}", title=f"{XSS_IMG} incident", summary=STORY, story_by="llm",
                        next_steps=[BREAKOUT, XSS_SCRIPT], risk_level="critical", category="web_attack",
                        hosts=[XSS_IMG], record_ids=[r.id for r in hostile])
    store.incidents.replace(old=[], incidents=[incident])
    store.close()

    out = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["report", "--html", str(out), "--db", url])
    assert result.exit_code == 0, result.output
    page = parse_html(out.read_text(encoding="utf-8"))

    tags = {e.tag for e in page.iter()}
    assert not tags & {"script", "img", "iframe", "object", "embed", "form", "link", "base"}, tags
    assert [(e.tag, a) for e in page.iter() for a in e.attrs if a.startswith("on")] == []
    ids = {e.attrs["id"] for e in page.iter() if e.attrs.get("id")}
    assert all(href.startswith("#") and href[1:] in ids for href in page.hrefs())
    assert len(page.find_all("details")) == len(analysed) + len(hostile)  # no record closed another's
    section = page.by_id(f"i-inc-{ID}")  # the quote in the id stayed inside its attribute
    assert section is not None and STORY in section.text()
    assert [li.text() for li in section.find_all("li")] == [BREAKOUT, XSS_SCRIPT]
    assert set(section.hrefs()) == {f"#r-{r.id}" for r in hostile}
    for record in hostile:
        summary = page.by_id(f"r-{record.id}").find_all("summary")[0]
        assert summary.hrefs() == [f"#i-inc-{ID}"]
    evidence = [pre.text() for pre in page.find_all("pre")]
    assert any(BREAKOUT in text for text in evidence)  # shown as the text the attacker wrote
