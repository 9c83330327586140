"""Evidence lines with their surroundings, read back from the analysed file when it still exists.

Owns: reading a log file the way analysis read it (`app.ingest`: compressed by magic bytes, EVTX,
overlong lines cut with the same note) only as far as the last line needed, telling whether the
file still holds the lines that were analysed (by the sha256 stored with each evidence line: like
with like, not a stored head against a whole line), and formatting numbered lines with the
evidence lines marked. Knows nothing of Streamlit or the store; a source that is not a file (e.g.
a triage snippet) simply has no context.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from logwarden.schemas import ExemplarLine

MAX_CONTEXT_LINES = 400  # keep the page readable when a record spans thousands of lines


@dataclass(frozen=True, slots=True)
class NumberedLine:
    line_no: int
    text: str
    is_evidence: bool


def context_lines(path: str, around: Sequence[int], *, marked: Collection[int] = (),
                  radius: int = 3) -> list[NumberedLine] | None:
    """Lines `radius` around each line number in `around` (1-based), marking those in `around` or
    `marked` as evidence; None if the file is gone or unreadable."""
    from logwarden.app.events import ErrorRow
    from logwarden.app.ingest import read_lines

    file = Path(path)
    if not around or not file.is_file():
        return None
    wanted, marked = _wanted(around, radius), set(around) | set(marked)
    found: list[NumberedLine] = []
    for item in islice(read_lines(file), max(wanted)):
        if isinstance(item, ErrorRow):
            return None  # unreadable now (permissions, damaged archive): show the stored lines only
        if item.line_no in wanted:
            found.append(NumberedLine(item.line_no, item.text, item.line_no in marked))
    return found


def _wanted(evidence: Sequence[int], radius: int) -> set[int]:
    wanted: set[int] = set()
    for n in sorted(evidence):
        wanted.update(range(max(1, n - radius), n + radius + 1))
        if len(wanted) >= MAX_CONTEXT_LINES:
            break
    return wanted


def format_lines(lines: Iterable[NumberedLine]) -> str:
    """`>   12  text` for evidence lines, `    13  text` around them, `…` between gaps."""
    out: list[str] = []
    previous = None
    for line in lines:
        if previous is not None and line.line_no != previous + 1:
            out.append("     …")
        marker = ">" if line.is_evidence else " "
        out.append(f"{marker} {line.line_no:>6}  {line.text}")
        previous = line.line_no
    return "\n".join(out)


def changed_since_analysis(stored: Sequence[ExemplarLine], lines: Sequence[NumberedLine]) -> bool:
    """True when the file no longer holds an analysed line (rotated or rewritten since): the sha256
    of the whole line as analysed against the file's line now. Lines stored without one (older
    records) compare their stored text with the same head of the file's line. A record expanded
    from a JSON document (CloudTrail's {"Records": [...]}) points at where its record starts, not
    at a line holding it; `is_document` says when that is so and nothing is compared."""
    current = {line.line_no: line.text for line in lines}
    for line in stored:
        now = current.get(line.line_no)
        if now is None:
            continue
        if line.sha256 is not None:
            if hashlib.sha256(now.encode("utf-8", "replace")).hexdigest() != line.sha256:
                return True
        elif not _same_head(line.text, now):
            return True
    return False


def _same_head(stored: str, now: str) -> bool:
    head = stored.split("… [truncated ", 1)[0]
    return now.strip().startswith(head.strip())


def is_document(path: str) -> bool:
    """Is the file one JSON document whose records were expanded (not one event a line)?"""
    from logwarden.app.events import LogLine
    from logwarden.app.ingest import read_lines
    from logwarden.app.parse import detect_format

    head = [item.text for item in islice(read_lines(Path(path)), 50) if isinstance(item, LogLine)]
    return detect_format(head, path).whole_file
