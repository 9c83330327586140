"""Markdown escaping, ATT&CK links and CSV cell defusing for the UI (logwarden.ui.text)."""

from __future__ import annotations

import html
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from logwarden.ui.text import csv_safe, escape_markdown, shorten, technique_link, technique_url

MD = MarkdownIt("commonmark")
HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[click](javascript:alert(1))",
           "# Heading", "*bold* _em_ `code`", "![x](http://evil/x.png)", "<http://evil.example/>",
           "a\\*b", "1. list", "> quote", "---", "&lt;b&gt;", "| a | b |"]


def rendered_text(markdown: str) -> str:
    """CommonMark HTML of one paragraph, tags checked (code spans are text), back to the text it shows."""
    out = MD.render(markdown).strip()
    assert out.startswith("<p>") and out.endswith("</p>"), out
    inner = out[3:-4].replace("<code>", "").replace("</code>", "")
    assert "<" not in inner.replace("<br />", ""), f"markup leaked: {out}"
    return html.unescape(inner.replace("<br />\n", "\n"))


def test_hostile_markdown_shows_literally():
    for text in HOSTILE:
        assert rendered_text(escape_markdown(text)) == text


@settings(max_examples=300)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1)
       .filter(lambda s: s.strip() == s and s.strip()))
def test_any_single_line_text_survives_escaping(text):
    assert rendered_text(escape_markdown(text, one_line=True)) == " ".join(text.split())


def test_urls_and_addresses_are_code_that_no_linkifier_turns_into_links():
    """GFM links bare URLs, www. names and e-mail addresses even when every character is escaped
    (issue 43 item 6: URLs from logs were clickable): they become code spans, shown exactly."""
    for text in ("GET https://evil.example/x?a=1_b from root@evil.example", "see www.evil.example.",
                 "HTTP://EVIL.EXAMPLE/`tick`", "![pixel](http://evil.example/p.png) [a](https://evil.example)"):
        escaped = escape_markdown(text, one_line=True)
        outside_code = re.sub(r"<code>.*?</code>", "", MD.render(escaped))
        assert "evil.example" not in outside_code.lower(), escaped  # nothing left for an autolinker
        assert rendered_text(escaped) == text
    assert escape_markdown("at https://evil.example/a.") == "at `https://evil.example/a`\\."


def test_multiline_keeps_line_breaks_without_code_blocks():
    text = "first line\n    indented would be code\n# not a heading"
    assert rendered_text(escape_markdown(text)) == "first line\nindented would be code\n# not a heading"


def test_technique_urls():
    assert technique_url("T1110") == "https://attack.mitre.org/techniques/T1110/"
    assert technique_url("T1110.001") == "https://attack.mitre.org/techniques/T1110/001/"
    for bad in ("javascript:alert(1)", "T11", "T1110.1", "T1110/../../x", ""):
        assert technique_url(bad) is None


def test_technique_link_escapes_the_name_and_only_links_real_ids():
    link = technique_link("T1190", "[click](javascript:alert(1))")
    out = MD.render(link)
    assert out.count("<a ") == 1 and 'href="https://attack.mitre.org/techniques/T1190/"' in out
    assert "javascript" not in out.split('href="')[1].split('"')[0]
    assert "<a " not in MD.render(technique_link("javascript:alert(1)"))


def test_csv_safe_defuses_formulas_only():
    assert csv_safe("=HYPERLINK(\"http://x\")") == "'=HYPERLINK(\"http://x\")"
    assert csv_safe("+1") == "'+1" and csv_safe("@SUM(A1)") == "'@SUM(A1)" and csv_safe("-2") == "'-2"
    assert csv_safe("203.0.113.7") == "203.0.113.7" and csv_safe("") == ""


def test_shorten():
    assert shorten("a  b\nc") == "a b c"
    assert shorten("x" * 10, 5) == "xxxx…"
