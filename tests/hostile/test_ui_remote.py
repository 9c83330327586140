"""Issue 43, item 6: a rule pack's text and a log's URLs reach the dashboard as text. A pack whose
rule title carries a markdown image (fetched from its author's server when a record is opened) and
whose references and false positives carry links and bare URLs; the record page of a record that
rule fired on, through Streamlit's AppTest: every markdown the page sends, labels included, renders
with no image, no link but logwarden's own, and no URL outside a code span (where GFM's autolinker does not look)."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from logwarden.app.config import get_settings

EVIL = "evil.example"
RULE_ID = "6f1a4a52-2b5e-4c43-9a55-0c1f3c2b7e10"
RULE = f"""\
title: 'Login burst ![pixel](https://{EVIL}/p.png)'
id: {RULE_ID}
status: stable
description: 'See https://{EVIL}/doc'
references:
    - https://{EVIL}/ref
falsepositives:
    - '[admins](http://{EVIL}/fp) or root@{EVIL}'
logsource:
    product: linux
    service: auth
detection:
    selection:
        message|contains: 'Failed password'
    condition: selection
level: high
"""


def test_a_hostile_pack_and_log_urls_render_no_image_or_link(tmp_path, monkeypatch):
    from _store_helpers import make_record
    from _ui_helpers import APP

    from logwarden.app.store import open_store

    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "rule.yml").write_text(RULE, encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'lw.db'}"
    store = open_store(url)
    record = make_record(source="/var/log/auth.log", line_start=1, line_end=1, risk_level="high",
                         anomaly=f"GET https://{EVIL}/x from root@{EVIL} via www.{EVIL}", detections=[RULE_ID])
    store.upsert_records([record])
    store.close()
    for name, value in (("LOGWARDEN_DB", url), ("LOGWARDEN_SIGMA_PATHS", str(pack))):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LOGWARDEN_UI_PASSWORD", raising=False)
    get_settings.cache_clear()
    try:
        at = AppTest.from_file(str(APP), default_timeout=120).run()
        at.query_params.update(id=record.id)
        at.switch_page("views/record.py").run()
    finally:
        get_settings.cache_clear()
    assert not at.exception, [e.value for e in at.exception]
    labels = [e.label for e in at.expander]
    assert any("Login burst" in label for label in labels), labels  # the pack's rule is shown
    shown = labels + [m.value for m in at.markdown] + [c.value for c in at.caption]
    assert any(EVIL in text for text in shown)
    md = MarkdownIt("commonmark")
    for text in shown:
        html = md.render(text)
        assert "<img" not in html, text
        hrefs = re.findall(r'<a href="([^"]*)"', html)  # logwarden's own: ATT&CK pages from checked ids
        assert all(h.startswith(("https://attack.mitre.org/techniques/T", "incident?id=")) for h in hrefs), text
        assert EVIL not in re.sub(r"<code>.*?</code>", "", html), text  # nothing for an autolinker
