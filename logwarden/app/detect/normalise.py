"""Request text as the attacker meant it: the transformations web rules match after, as OWASP CRS
applies its `t:` transformations before its rules.

`decoded(text)` undoes the encodings a server or browser undoes — percent (`%27`, IIS's `%u0027`,
`+`), overlong UTF-8 (`%c0%af` is `/`), HTML character references (`&#x27;`, `&lt;`) — round after
round to a fixed point (at most `MAX_DECODE_ROUNDS`, against double encoding), then folds what a
backend folds: Unicode NFKC (full-width `＜` is `<`), odd whitespace (`%0b`, which RE2's `\\s`
does not match) to a space, and `/./` and `//` path segments. `forms(text)` is the decoded text and,
where they differ from it, its SQL form (comments removed, MySQL's `/*!50000UNION*/` kept as
`UNION`) and its shell form (quotes and backslashes removed, `${IFS}` a space, a glob that names
exactly one sensitive command or file (`c?t`, `/e??/p?sswd`) replaced by that name). A rule that
matches any form fires, so each rule sees the text in the shape its payloads take, and no
transformation can hide what an other rule looks for (`ORDER BY 1/**/` keeps its comment in the
decoded form).

Pure functions of text; the raw fields stay as logged (display, evidence, SigmaHQ's `cs-uri-query`).
Knows nothing about events or rules.
"""

from __future__ import annotations

import fnmatch
import html
import re
import unicodedata
from collections.abc import Sequence
from urllib.parse import unquote_to_bytes

MAX_DECODE_ROUNDS = 4  # attackers double- and triple-encode to slip past naive filters

_PERCENT_U = re.compile(r"%u([0-9a-fA-F]{4})")
# Overlong UTF-8 (never valid: C0/C1 leads, E0 with 80-9F, F0 with 80-8F), decoded as IIS once did
_OVERLONG = re.compile(rb"[\xc0\xc1][\x80-\xbf]|\xe0[\x80-\x9f][\x80-\xbf]|\xf0[\x80-\x8f][\x80-\xbf]{2}")
# Named references need their `;` (`&lt=5` in a query is a parameter); numeric ones do not, as in browsers
_ENTITY = re.compile(r"&(?:#[0-9]{1,7};?|#[xX][0-9a-fA-F]{1,6};?|[A-Za-z][A-Za-z0-9]{1,31};)")
_ODD_SPACE = re.compile(r"[^\S\t\r\n ]")  # \v, \f, NBSP …: RE2's \s is only [\t\n\f\r ]
_DOT_SEGMENT = re.compile(r"/(?:\./)+")
_SLASHES = re.compile(r"(?<![:/])/{2,}")  # not the `//` of `http://`
_SHELL_CONTEXT = re.compile(r"[;|`\n]|\$[({]|\$IFS\b")
_SHELL_IFS = re.compile(r"\$\{IFS\}|\$IFS\b")
_SHELL_ESCAPE = re.compile(r"\\(?=[A-Za-z0-9/._-])")
_SHELL_SEPARATORS = re.compile(r"([\s;|&`()=<>]+)")

# What a shell glob may stand for: the commands and files the web rules name
_COMMANDS = ("cat", "id", "whoami", "uname", "wget", "curl", "nc", "ncat", "bash", "sh", "ping", "nslookup", "ls",
             "echo", "rm", "chmod", "python", "python3", "perl", "php", "busybox", "tftp", "sleep", "ifconfig",
             "netstat", "head", "tail", "more", "less", "base64")
_FILES = ("/etc/passwd", "/etc/shadow", "/etc/group", "/etc/hosts", "/etc/issue", "/etc/hostname")
GLOB_TARGETS = tuple(dict.fromkeys((*_COMMANDS, *(f"{d}{c}" for d in ("/bin/", "/usr/bin/") for c in _COMMANDS),
                                    *_FILES)))
_LONGEST_TARGET = max(map(len, GLOB_TARGETS))
_TARGETS_BY_LENGTH: dict[int, tuple[str, ...]] = {
    n: tuple(t for t in GLOB_TARGETS if len(t) == n) for n in set(map(len, GLOB_TARGETS))}


def forms(text: str) -> str | tuple[str, ...]:
    """The decoded text, or a tuple of it and its SQL and shell forms where those differ from it."""
    plain = decoded(text)
    variants = tuple(dict.fromkeys((plain, sql_form(plain), shell_form(plain))))
    return plain if len(variants) == 1 else variants


def decoded(text: str) -> str:
    """Percent, `%u`, overlong UTF-8 and HTML decoding to a fixed point, then NFKC, whitespace, paths."""
    for _ in range(MAX_DECODE_ROUNDS):
        step = entity_decode(url_decode_once(text))
        if step == text:
            break
        text = step
    return dot_segments(spaces(nfkc(text)))


def url_decode_once(text: str) -> str:
    """One round of `+`, `%XX` and `%uXXXX` decoding; overlong UTF-8 read as the character it spells,
    other bytes that are not UTF-8 as U+FFFD."""
    if "%" not in text:
        return text.replace("+", " ")
    text = _PERCENT_U.sub(lambda m: _utf8_escapes(chr(int(m[1], 16))), text.replace("+", " "))
    data = _OVERLONG.sub(_overlong_char, unquote_to_bytes(text.encode("utf-8", "surrogatepass")))
    return data.decode("utf-8", "replace")


def _utf8_escapes(char: str) -> str:
    if char in "%+":  # one round decodes one layer: `%u0025` is a `%`, not the start of an escape
        return f"%{ord(char):02X}"
    return "".join(f"%{b:02X}" for b in char.encode("utf-8", "surrogatepass"))


def _overlong_char(match: re.Match[bytes]) -> bytes:
    raw = match[0]
    if len(raw) == 2:
        point = (raw[0] & 0x1F) << 6 | raw[1] & 0x3F
    elif len(raw) == 3:
        point = (raw[0] & 0x0F) << 12 | (raw[1] & 0x3F) << 6 | raw[2] & 0x3F
    else:
        point = (raw[0] & 0x07) << 18 | (raw[1] & 0x3F) << 12 | (raw[2] & 0x3F) << 6 | raw[3] & 0x3F
    return chr(point).encode("utf-8")


def entity_decode(text: str) -> str:
    """`&#x27;`, `&#39`, `&lt;` → `'`, `'`, `<`; an `&` that starts no reference stays."""
    if "&" not in text:
        return text
    return _ENTITY.sub(lambda m: html.unescape(m[0]), text)


def nfkc(text: str) -> str:
    """Compatibility forms folded: full-width `ＵＮＩＯＮ` and `＜` are `UNION` and `<`."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def spaces(text: str) -> str:
    """Whitespace that SQL and shells read as a space (`\\v`, `\\f`, NBSP …) as a space; \\t\\r\\n stay
    (header injection is told by its line breaks)."""
    return _ODD_SPACE.sub(" ", text)


def dot_segments(text: str) -> str:
    """`/etc/./passwd` and `/etc//passwd` → `/etc/passwd`; `..` segments stay (they are the attack)."""
    if "/." not in text and "//" not in text:
        return text
    return _SLASHES.sub("/", _DOT_SEGMENT.sub("/", text))


def sql_form(text: str) -> str:
    """SQL comments as the space they are to a parser; MySQL's versioned `/*!50000UNION*/` as its body.
    (A scan with `find`, not a lazy regex: an unclosed `/*` repeated costs no backtracking.)"""
    pieces, start = [], 0
    while (opened := text.find("/*", start)) >= 0 and (closed := text.find("*/", opened + 2)) >= 0:
        body = text[opened + 2:closed]
        pieces += [text[start:opened], f" {body[1:].lstrip('0123456789')} " if body.startswith("!") else " "]
        start = closed + 2
    return "".join(pieces) + text[start:] if pieces else text


def shell_form(text: str) -> str:
    """The words a shell runs, where the text holds a command (`;`, `|`, a backtick, `$(`, `${`):
    `c'a't` and `c\\at` are `cat`, `${IFS}` a space, and a glob is the one sensitive command or file
    it matches (`/???/c?t` → `/bin/cat`), else left as written."""
    if not _SHELL_CONTEXT.search(text):
        return text  # no command separator or substitution: no shell runs it, and quotes are text
    words = _SHELL_ESCAPE.sub("", _SHELL_IFS.sub(" ", text)).replace("'", "").replace('"', "")
    if not any(c in words for c in "?*["):
        return words
    return "".join(_glob_target(word) for word in _SHELL_SEPARATORS.split(words))


def _glob_target(word: str) -> str:
    """The one glob target `word` matches, else `word` (a word without wildcards among them)."""
    if "*" in word or "[" in word:
        candidates: Sequence[str] = GLOB_TARGETS if len(word) <= 2 * _LONGEST_TARGET else ()
    else:
        candidates = _TARGETS_BY_LENGTH.get(len(word), ()) if "?" in word else ()  # `?` is one character
    if not candidates:
        return word  # (before fnmatch compiles the word: a long one costs seconds)
    hits = fnmatch.filter(candidates, word)  # (no case folding on POSIX, as in a shell)
    return hits[0] if len(hits) == 1 else word
