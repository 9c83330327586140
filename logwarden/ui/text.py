"""Turning untrusted log text into safe page text: markdown escaping, truncation, ATT&CK links.

Log content is data written by whoever can reach the logged service (an attacker included), so
anything from a record that goes through `st.markdown` (or a markdown-rendering label) is escaped
here first. Knows nothing of Streamlit or the store.
"""

from __future__ import annotations

import re
import string

# CommonMark lets any ASCII punctuation be backslash-escaped and then shows it literally; escaping
# all of it also defuses Streamlit's extensions (`:red[...]`, `:material/x:`, `$latex$`).
_PUNCTUATION = frozenset(string.punctuation)
_TECHNIQUE = re.compile(r"^T([0-9]{4})(?:[.]([0-9]{3}))?$")
ATTACK_BASE = "https://attack.mitre.org/techniques/"


def escape_markdown(text: str, *, one_line: bool = False) -> str:
    """`text` such that markdown shows it character for character (no links, HTML, headings…)."""
    escaped = "".join("\\" + ch if ch in _PUNCTUATION else ch for ch in text)
    if one_line:
        return " ".join(escaped.split())
    # Keep line breaks visible without letting indentation start a code block.
    return "  \n".join(line.strip() for line in escaped.splitlines())


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
