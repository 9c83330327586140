"""Which format a file is in: score every parser on a sample of its first non-empty lines.

Owns the decision and its human-readable reason. Knows nothing about reading files or what
happens to the events afterwards.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from logwarden.app.events import LogLine
from logwarden.app.parse.auditd import AuditdParser
from logwarden.app.parse.cloud import is_azure_export, is_cloudtrail_file
from logwarden.app.parse.jsonlog import classify_object
from logwarden.app.parse.objects import load_object
from logwarden.app.parse.syslog import Rfc5424Parser, SyslogParser
from logwarden.app.parse.timestamps import YearGuesser, find_timestamp
from logwarden.app.parse.web import (
    AccessParser,
    ApacheErrorParser,
    AwsLbParser,
    HttpRequestParser,
    W3CParser,
    ZeekParser,
)
from logwarden.app.parse.windows import xml_event

SAMPLE_LINES = 50
NOT_LOGS = ("prose", "labels")  # what a file can be sniffed as that is not read at all
_LABEL_KEYS = frozenset({"file", "line_start", "line_end"})
_MARKDOWN = re.compile(r"\s{0,3}(?:#{1,6}\s|[-*+]\s|\d{1,3}[.)]\s|>\s?|```|~~~|\|.*\|\s*$)")
_PROSE_MIN_SHARE = 0.25
MIN_SHARE = 0.2  # below this share of matched sample lines, a parser's match is noise

# Ties go to the more specific grammar (a line matching RFC 5424 is not "just" syslog).
TEXT_PARSERS = (Rfc5424Parser, AuditdParser, ApacheErrorParser, AccessParser, AwsLbParser, W3CParser, ZeekParser,
                 HttpRequestParser, SyslogParser)
_PRIORITY = ("rfc5424", "auditd", "apache_error", "access", "aws_lb", "w3c", "zeek", "http_request", "windows", "cloudtrail",
             "json", "syslog")
_JSON_KINDS = frozenset(("windows", "cloudtrail", "json"))
# '{' or '[' opening a document, not "[Sun Dec 04 …" (Apache) or "[  12.3] …" (dmesg)
_JSON_START = re.compile(r'\s*(?:[{\[]\s*$|\{\s*"|\[\s*[{\["])')
_DESCRIPTION = {
    "syslog": "RFC 3164 / rsyslog file format", "rfc5424": "RFC 5424 syslog",
    "access": "Apache/Nginx access log", "apache_error": "Apache/Nginx error log",
    "w3c": "W3C extended log (IIS)", "zeek": "Zeek log (tab-separated)", "aws_lb": "AWS ALB/ELB access log",
    "http_request": "raw HTTP requests (request line, headers, body)",
    "auditd": "Linux audit records", "windows": "Windows event JSON or XML",
    "cloudtrail": "CloudTrail records", "json": "JSON objects",
}


@dataclass(frozen=True, slots=True)
class FormatDecision:
    """`whole_file`: the file is one JSON document (e.g. CloudTrail `{"Records": [...]}` or a
    pretty-printed array): expand it with `parse_file_json`, not line by line."""

    name: str
    confidence: float
    reason: str
    whole_file: bool = False


def fallback_order(fmt: str) -> tuple[str, ...]:
    """The parsers a line goes to, in order, when the file's own (`fmt`) cannot read it: every
    other format, most specific first; the generic parser after them all."""
    return tuple(name for name in _PRIORITY if name != fmt)


def detect_format(lines: Sequence[str], path: str | None = None, *, documents: bool = True) -> FormatDecision:
    """Decide the format of a file from its first lines (and its name, only for JSON hints).
    A file that is not a log at all (`NOT_LOGS`: markdown or prose, logwarden's own evaluation
    labels) gets that name; it is skipped, not read as `generic` lines. `documents=False`: the
    file is known not to be one JSON document; choose a line format."""
    sample = [text for text in lines if text.strip()][:SAMPLE_LINES]
    if not sample:
        return FormatDecision("generic", 0.0, "generic: no non-empty lines to sample")
    counts, cloudtrail_files, azure_files = _score(sample)
    if (not_a_log := _not_a_log(sample, counts)) is not None:
        return not_a_log
    if not documents:
        return _best(counts, len(sample))
    if cloudtrail_files:
        return FormatDecision("cloudtrail", 1.0, f"cloudtrail: {cloudtrail_files} line(s) hold a "
                              f"CloudTrail file ({{\"Records\": [...]}})", whole_file=True)
    if azure_files:
        return FormatDecision("json", 1.0, f"json: {azure_files} line(s) hold an Azure Monitor export "
                              f"({{\"records\": [...]}})", whole_file=True)
    document = _json_document(sample, counts, path)
    if document is not None:
        return document
    return _best(counts, len(sample))


def _score(sample: list[str]) -> tuple[Counter, int, int]:
    counts: Counter = Counter()
    cloudtrail_files = azure_files = 0
    parsers = [cls() for cls in TEXT_PARSERS]
    for number, text in enumerate(sample, 1):
        obj = load_object(text)
        if obj is not None:
            if is_cloudtrail_file(obj):
                cloudtrail_files += 1
            azure_files += is_azure_export(obj)
            counts[classify_object(obj)] += 1
            continue
        line = LogLine(source="<sample>", inode=0, offset=0, line_no=number, text=text)
        if xml_event(line, text) is not None:  # an event as XML
            counts["windows"] += 1
            continue
        counts.update(p.name for p in parsers if p.parse(line) is not None)
    return counts, cloudtrail_files, azure_files


def _not_a_log(sample: list[str], counts: Counter) -> FormatDecision | None:
    """Labels for `logwarden eval` (objects naming a file and a line span), or prose. A file is
    prose only when it is sure to be: no line of the sample is read by a log parser or carries a
    timestamp, and it is made of markdown (headings, lists, tables, fences) or of sentences. A log
    read by mistake costs a few generic events; a log skipped by mistake loses every line of it."""
    total = len(sample)
    if counts["json"] == total and all(_LABEL_KEYS <= set(load_object(text) or ()) for text in sample):
        return FormatDecision("labels", 1.0, "not a log: evaluation labels (objects naming a file and a "
                              "line span, as `logwarden eval --labels` reads)")
    if any(counts.values()):
        return None
    years = YearGuesser()
    if any(find_timestamp(text, years) is not None for text in sample):
        return None
    markdown = sum(bool(_MARKDOWN.match(text)) for text in sample) / total
    sentences = sum(_is_sentence(text) for text in sample) / total
    if markdown >= _PROSE_MIN_SHARE or sentences >= 2 * _PROSE_MIN_SHARE:
        kind = "markdown" if markdown >= _PROSE_MIN_SHARE else "prose"
        return FormatDecision("prose", 1.0, f"not a log: {kind} ({markdown:.0%} markdown lines, {sentences:.0%} "
                              "sentences, no line a log parser reads, no timestamps)")
    return None


def _is_sentence(text: str) -> bool:
    words = text.split()
    return len(words) >= 8 and sum(w.strip(".,;:!?()\"'`").isalpha() for w in words) / len(words) >= 0.8


def _json_document(sample: list[str], counts: Counter, path: str | None) -> FormatDecision | None:
    """A multi-line JSON document: starts with '{' or '[' but its lines are not JSON objects, nor
    lines of a text format (one JSON line heading an auth.log is a line, not a document)."""
    json_lines = counts["windows"] + counts["cloudtrail"] + counts["json"]
    text_lines = max((n for name, n in counts.items() if name not in _JSON_KINDS), default=0)
    if (not _JSON_START.match(sample[0]) or load_object(sample[0]) is not None
            or max(json_lines, text_lines) >= len(sample) / 2):
        return None
    text = "\n".join(sample)
    if ('"eventSource"' in text and '"eventName"' in text) or '"CloudTrailEvent"' in text:
        name = "cloudtrail"
    elif any(key in text for key in ('"EventID"', '"event_id"', '"EventId"', '"System"')):
        name = "windows"
    else:
        name = "json"
    hint = " (.json file)" if path and str(path).lower().endswith(".json") else ""
    return FormatDecision(name, 0.6, f"{name}: the file starts a multi-line JSON document{hint};"
                          f" records will be expanded from the whole file", whole_file=True)


def _best(counts: Counter, total: int) -> FormatDecision:
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], _PRIORITY.index(kv[0])))
    if not ranked or ranked[0][1] / total < MIN_SHARE:
        best = f" (best: {ranked[0][0]} {ranked[0][1]}/{total})" if ranked else ""
        return FormatDecision("generic", 0.0, f"generic: no known format matched at least "
                              f"{MIN_SHARE:.0%} of {total} sample lines{best}")
    name, hits = ranked[0]
    reason = f"{name}: {hits}/{total} sample lines matched {_DESCRIPTION[name]}"
    runners = [f"{other} {n}/{total}" for other, n in ranked[1:3]]
    if runners:
        reason += f"; also matched: {', '.join(runners)}"
    return FormatDecision(name, round(hits / total, 3), reason)
