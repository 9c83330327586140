"""Faithful narratives: every fact a model's text names must occur in the digest it was given.

Owns: finding the entities a sentence names — IP addresses, hashes, paths (Unix and Windows),
file, process and host names (anything dotted, slashed or backslashed), numbers,
identifier-like names (a digit, `_`, `@`, `$` or `\\` in the word), quoted strings, and the word
after a cue such as "user" or "host" — and checking each against the digest text (case-insensitive).
A clause that names an entity the digest does not contain is removed from the text; the
removed entities are returned so they can be counted and stored, never shown as fact.
ATT&CK ids and the digest's own evidence ids are vocabulary, not claims.
Knows nothing of records, the model or the store: text in, text out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from logwarden.schemas import CATEGORIES

_QUOTED = re.compile(r"'([^'\s][^']{0,200})'|\"([^\"]{1,200})\"|`([^`]{1,200})`")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]*\d)")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_HASH = re.compile(r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{32,128}(?![0-9A-Fa-f])")
_WIN_PATH = re.compile(r"(?:[A-Za-z]:\\|\\\\|%\w+%\\)[^\s\"'<>|,;()]+")
_UNIX_PATH = re.compile(r"(?<![\w/.~-])/(?:[\w.@%+~-]+/?)+")
_SLASHED = re.compile(r"(?<![\w/])[\w.-]+/[\w.-]*[\d.][\w./-]*")  # user agents, protocols: sqlmap/1.7, HTTP/1.1
_DOTTED = re.compile(r"(?<![\w.-])[\w$-]+(?:\.[\w$-]+)+(?![\w-])")
# a digit, `_`, `@`, `$` or `\` makes a word a name (WKS-0142, svc_sql, bob@corp, CORP\\bob); hyphens alone do not
# ("key-only"), nor do category names
_IDENT = re.compile(r"(?<![\w\\$@.-])[\w$@\\-]*(?:\d|[_@$\\])[\w$@\\.-]*(?![\w])")
_WORDISH = re.compile(r"\w")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*(?![\w])")
_VOCABULARY = re.compile(r"^(?:T\d{4}(?:\.\d{3})?|[TL]\d{1,9}|" + "|".join(c for c in CATEGORIES if "_" in c) + r")$")
# The word after one of these names someone or something ("user mallory", "host DC02"), unless it reads as
# prose: a stop word ("host behind", "account owner"), a verb form ("account ran", "user logged").
_CUE = re.compile(r"\b(?:user|account|host|hostname|computer|workstation)\s+(?:named\s+|called\s+)?([^\s,;:()]+)",
                  re.IGNORECASE)
_PROSE = re.compile(r"^[a-z]+(?:ing|ed)$")
_NOT_A_NAME = frozenset("""a an the this that these those its their his her our your any each every all some no not
    multiple several many one two three few new same other another unknown suspicious unusual legitimate local remote
    outside external internal privileged administrative account accounts user users host hosts and or with from to of
    on in at for by as is was were are be been has have had logon logons login logins name names agent agents session
    sessions input data creation created rights enumeration privileges privilege group groups password passwords
    credentials credential activity activities behaviour behavior profile profiles directory mode level context
    lockout lockouts mapping attempts attempt authentication identity identities object objects list lists
    information details control access which who whose hit owner owners names logged flagged behind ran runs run
    did does do can could will would should may might must also then that's into onto via across over under after
    before while during through against without within itself""".split())
_CLAUSE = re.compile(r"(?<=[.;!?])\s+")
_TRIM = ".,;:!?)]}>'\"`"


@dataclass(slots=True)
class Grounded:
    """A model text after the check: what may be shown, and what it claimed that the digest lacks."""

    text: str
    entities: list[str] = field(default_factory=list)
    ungrounded: list[str] = field(default_factory=list)


def entities(text: str) -> list[str]:
    """The facts `text` names, in order of first appearance, without duplicates."""
    found: list[tuple[int, str]] = []
    taken: list[tuple[int, int]] = []

    def add(start: int, value: str) -> None:
        value = value.strip().rstrip(_TRIM).lstrip("(['\"`")
        end = start + len(value)
        if value and not _VOCABULARY.match(value) and not any(a <= start < b for a, b in taken):
            found.append((start, value))
            taken.append((start, end))

    for match in _QUOTED.finditer(text):
        add(match.start(), next(g for g in match.groups() if g))
    for pattern in (_IPV4, _IPV6, _HASH, _WIN_PATH, _UNIX_PATH, _SLASHED, _DOTTED, _IDENT, _NUMBER):
        for match in pattern.finditer(text):
            if _WORDISH.search(match.group()):
                add(match.start(), match.group())
    for match in _CUE.finditer(text):
        name = match.group(1).strip(_TRIM)
        if name.lower() not in _NOT_A_NAME and len(name) > 2 and not _PROSE.match(name):
            add(match.start(1), name)
    return list(dict.fromkeys(value for _, value in sorted(found)))


def _occurs(entity: str, digest_lower: str) -> bool:
    """`digest_lower`: the digest lower-cased with `\\` as `/` (a model may write C:/Users for C:\\Users)."""
    needle = entity.lower().replace("\\", "/")
    if needle in digest_lower:
        return True
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+", needle):  # "1,200" against "1200x"
        return needle.replace(",", "") in digest_lower
    return False


def ground(text: str, digest: str) -> Grounded:
    """`text` with every clause removed that names an entity absent from `digest`."""
    lowered = digest.lower().replace("\\", "/")
    kept, named, missing = [], [], []
    for clause in _CLAUSE.split(text.strip()):
        names = entities(clause)
        absent = [e for e in names if not _occurs(e, lowered)]
        named += names
        missing += absent
        if not absent:
            kept.append(clause)
    return Grounded(text=" ".join(kept).strip(), entities=list(dict.fromkeys(named)),
                    ungrounded=list(dict.fromkeys(missing)))
