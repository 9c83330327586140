"""Evidence lines with their surroundings, read back from the analysed file when it still exists.

Owns: opening a (possibly compressed) log file, reading only as far as the last line needed,
and formatting numbered lines with the evidence lines marked. Knows nothing of Streamlit or the
store; a source that is not a file (e.g. a triage snippet) simply has no context.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import IO

OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
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
    file = Path(path)
    if not around or not file.is_file():
        return None
    wanted, marked = _wanted(around, radius), set(around) | set(marked)
    try:
        with _open(file) as fh:
            return [NumberedLine(n, text.rstrip("\r\n"), n in marked)
                    for n, text in enumerate(islice(fh, max(wanted)), start=1) if n in wanted]
    except (OSError, EOFError, lzma.LZMAError):
        return None  # unreadable now (permissions, truncated archive): show the stored lines only


def _wanted(evidence: Sequence[int], radius: int) -> set[int]:
    wanted: set[int] = set()
    for n in sorted(evidence):
        wanted.update(range(max(1, n - radius), n + radius + 1))
        if len(wanted) >= MAX_CONTEXT_LINES:
            break
    return wanted


def _open(file: Path) -> IO[str]:
    opener = OPENERS.get(file.suffix, open)
    return opener(file, "rt", encoding="utf-8", errors="replace")


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


def changed_since_analysis(stored: dict[int, str], lines: Sequence[NumberedLine]) -> bool:
    """True when the file's line differs from the stored exemplar (rotated or rewritten since)."""
    current = {line.line_no: line.text for line in lines}
    return any(n in current and current[n].strip() != text.strip() for n, text in stored.items())
