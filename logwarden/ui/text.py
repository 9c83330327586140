"""Turning untrusted log text into safe page text: markdown escaping, truncation, ATT&CK links.

Log content is data written by whoever can reach the logged service (an attacker included), and a
rule pack's text is written by whoever wrote the pack, so anything from a record or a pack that goes
through `st.markdown` (or a markdown-rendering label, caption, alert or metric) is escaped here
first: no markup, no image fetched from anywhere, no link. Knows nothing of Streamlit or the store.
"""

from __future__ import annotations

import re
import string

# CommonMark lets any ASCII punctuation be backslash-escaped and then shows it literally; escaping
# all of it also defuses Streamlit's extensions (`:red[...]`, `:material/x:`, `$latex$`).
_PUNCTUATION = frozenset(string.punctuation)
# GitHub-flavoured markdown turns bare URLs, www. names and e-mail addresses into links even when
# each of their characters is escaped (it finds them in the parsed text): they go into code spans,
# which it leaves alone, and which keep them exact for copying.
_AUTOLINKED = re.compile(r"(?:https?://|www\.)\S*[^\s.,;:!?'\")\]]|[-.\w+]+@[-\w]+(?:\.[-\w]+)+", re.IGNORECASE)
_TECHNIQUE = re.compile(r"^T([0-9]{4})(?:[.]([0-9]{3}))?$")
ATTACK_BASE = "https://attack.mitre.org/techniques/"


def escape_markdown(text: str, *, one_line: bool = False) -> str:
    """`text` such that markdown shows it character for character (no links, images, HTML,
    headings…; URLs and e-mail addresses as code)."""
    if one_line:
        return _escape_line(" ".join(text.split()))
    # Keep line breaks visible without letting indentation start a code block.
    return "  \n".join(_escape_line(line.strip()) for line in text.splitlines())


def _escape_line(line: str) -> str:
    out, start = [], 0
    for match in _AUTOLINKED.finditer(line):
        out += [_escape_punctuation(line[start:match.start()]), _code_span(match.group())]
        start = match.end()
    out.append(_escape_punctuation(line[start:]))
    return "".join(out)


def _escape_punctuation(text: str) -> str:
    return "".join("\\" + ch if ch in _PUNCTUATION else ch for ch in text)


def _code_span(text: str) -> str:
    """A code span shows its text as it is; its fence is longer than any run of backticks inside."""
    if "`" not in text:
        return f"`{text}`"
    fence = "`" * (max(len(run) for run in re.findall("`+", text)) + 1)
    return f"{fence} {text} {fence}"  # the spaces keep a backtick at either end apart from the fence


def shorten(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def technique_url(technique_id: str) -> str | None:
    """attack.mitre.org page of a technique id (T1110 or T1110.001); None if it is not an id."""
    match = _TECHNIQUE.match(technique_id.strip())
    if match is None:
        return None
    main, sub = match.groups()
    return f"{ATTACK_BASE}T{main}/{sub}/" if sub else f"{ATTACK_BASE}T{main}/"


def technique_link(technique_id: str, name: str = "") -> str:
    """A markdown link to the technique page; the label is escaped, the URL built from a checked id."""
    label = escape_markdown(f"{technique_id} {name}".strip(), one_line=True)
    url = technique_url(technique_id)
    return f"[{label}]({url})" if url else label


def csv_safe(value: str) -> str:
    """Defuse spreadsheet formulas in CSV cells (OWASP CSV injection): a log line like
    `=HYPERLINK(...)` must stay text when the analyst opens the download in a spreadsheet."""
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value
