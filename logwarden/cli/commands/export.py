"""`logwarden export`: stored records to a SIEM format, a file/stdout, or forwarded (HEC, syslog) once per
destination: the store's delivery cursor says what each destination took, and a re-run sends the rest.
A time filter that empties the output says the stored range (times are the logs' own)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from datetime import datetime

import click

from logwarden.cli.common import (
    StatusChoice,
    db_option,
    err_console,
    handle_errors,
    json_option,
    open_for_writing,
    open_store_from,
    print_json,
    time_filter_hint,
    time_range,
    write_lines,
)
from logwarden.errors import ConfigError
from logwarden.schemas import CATEGORIES, RISK_LEVELS

FORMATS = ("jsonl", "ecs", "ocsf", "splunk-hec", "cef")
RESEND = ("none", "uncertain", "all")
KINDS = ("records", "incidents")
PAGE = 1000


@click.command()
@click.option("--format", "fmt", type=click.Choice(FORMATS), required=True, help="Output format.")
@click.option("--kind", type=click.Choice(KINDS), default="records", show_default=True,
              help="What to export: risk records, or incidents (jsonl, ecs, ocsf: OCSF Incident Finding).")
@click.option("--since", default=None,
              help="Only those whose last event is at/after T: ISO time or 15m/24h/7d (the logs' own times).")
@click.option("--until", default=None,
              help="Only those whose last event is at/before T: ISO time or 15m/24h/7d (the logs' own times).")
@click.option("--min-risk", type=click.Choice(RISK_LEVELS), default=None, help="Only records at or above this level.")
@click.option("--category", type=click.Choice(CATEGORIES), multiple=True, help="Only these categories.")
@click.option("--status", type=StatusChoice(), multiple=True,
              help="Only these review states (repeatable), as `records review --status` sets them.")
@click.option("--out", default="-", show_default=True, help="File to write ('-' = stdout).")
@click.option("--forward", default=None,
              help="Send instead of writing: https://host:8088/services/collector/event (splunk-hec) or "
                   "syslog://host:514 / syslog+tcp://host:514 (cef).")
@click.option("--token-env", default="SPLUNK_HEC_TOKEN", show_default=True, help="Env var with the HEC token.")
@click.option("--insecure", is_flag=True, help="Do not verify the HEC server's TLS certificate.")
@click.option("--resend", type=click.Choice(RESEND), default="none", show_default=True,
              help="With --forward: also send what the destination may have got without answering (uncertain), "
                   "or everything again (all). By default only what it has not taken is sent.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=None,
              help="With --forward: seconds one request may take (default: HEC 30, syslog 10).")
@json_option
@db_option
@handle_errors
def export(fmt, kind, since, until, min_risk, category, status, out, forward, token_env, insecure, resend, timeout,
           as_json, db_url):
    """Export stored records as JSONL, ECS, OCSF, Splunk HEC or CEF (incidents: JSONL, ECS, OCSF).

    With --forward each destination gets each record once: the store remembers what it took (indexed,
    accepted, or sent and not confirmed: syslog cannot confirm), and a re-run sends only the rest."""
    from logwarden.app.export import INCIDENT_FORMATS

    if kind == "incidents" and fmt not in INCIDENT_FORMATS:
        raise click.UsageError(f"--kind incidents exports as {', '.join(INCIDENT_FORMATS)}")
    if as_json and not forward:
        raise click.UsageError("--json prints the delivery report of --forward (without it the events go to --out)")
    start, end = time_range(since, until)
    target = open_for_writing(out) if out != "-" and not forward else None  # a bad --out fails first
    # forwarding writes the delivery cursor: the store is opened for writing (never created)
    store = open_store_from(db_url, readonly=not forward, create=False)
    wanted = Wanted(start, end, min_risk, tuple(category), tuple(status))
    items = (_incident_items if kind == "incidents" else _record_items)(store, fmt, wanted)
    if forward:
        _forward(store, fmt, kind, items, forward, token_env, insecure, resend, timeout, as_json)
    else:
        _write(items, target, kind, fmt)
    if not items and (start or end):
        _explain_empty(store, kind, wanted)


def _write(items, target, kind, fmt) -> None:
    lines = [line for _, line in items]
    if target is None:
        for line in lines:
            click.echo(line)
    else:
        write_lines(target, lines)
    err_console.print(f"{len(lines)} {kind} exported as {fmt}", highlight=False)


@dataclass(frozen=True)
class Wanted:
    """What --since/--until/--min-risk/--category/--status ask for, records or incidents alike."""

    since: datetime | None
    until: datetime | None
    min_risk: str | None
    categories: tuple[str, ...]
    statuses: tuple[str, ...]

    def untimed(self) -> Wanted:
        return replace(self, since=None, until=None)


def _record_filter(wanted: Wanted):
    from logwarden.app.store import RecordFilter

    return RecordFilter(since=wanted.since, until=wanted.until, min_risk=wanted.min_risk,
                        categories=wanted.categories, statuses=wanted.statuses)


def _record_items(store, fmt, wanted: Wanted) -> list[tuple[str, str]]:
    from logwarden.app.export import export_records

    records = _all_records(store, _record_filter(wanted))
    return list(zip((r.id for r in records), export_records(records, fmt)))


def _incident_items(store, fmt, wanted: Wanted) -> list[tuple[str, str]]:
    from logwarden.app.export import export_incidents

    found = _incidents(store, wanted)
    return list(zip((i.id for i in found), export_incidents(found, fmt)))


def _incidents(store, wanted: Wanted):
    from logwarden.app.store import IncidentFilter

    found = store.incidents.query(IncidentFilter(min_risk=wanted.min_risk, since=wanted.since,
                                                 statuses=wanted.statuses), limit=10**9)
    return [i for i in found if (not wanted.categories or i.category in wanted.categories)
            and (wanted.until is None or (i.last_ts is not None and i.last_ts <= wanted.until))]


def _explain_empty(store, kind: str, wanted: Wanted) -> None:
    """The time filter emptied the output: if the other filters alone match some, say their range."""
    if kind == "incidents":
        times = [i.last_ts for i in _incidents(store, wanted.untimed())]
        count, dated = len(times), sorted(t for t in times if t)
        first, last = (dated[0], dated[-1]) if dated else (None, None)
    else:
        untimed = _record_filter(wanted.untimed())
        count = store.count_records(untimed)
        first, last = store.last_event_span(untimed)
    if count:
        err_console.print(time_filter_hint(kind, count, first, last), highlight=False, markup=False)


def _all_records(store, filters):
    """Page through the filtered records in SQL (never the whole table in one query)."""
    records, offset = [], 0
    while page := store.query_records(filters, order_by="last_ts", descending=False, limit=PAGE, offset=offset):
        records += page
        offset += len(page)
    return records


def _forward(store, fmt, kind, items, url, token_env, insecure, resend, timeout, as_json) -> None:
    from logwarden.app.export import ForwardOptions, deliver

    token = None
    if url.startswith(("http://", "https://")):
        if fmt != "splunk-hec":
            raise ConfigError("an http(s) --forward is a Splunk HEC endpoint: use --format splunk-hec")
        token = os.environ.get(token_env)
        if not token:
            raise ConfigError(f"set the HEC token in ${token_env} (or choose another with --token-env)")
    options = ForwardOptions(token=token, verify_tls=not insecure, timeout=timeout, resend=resend)
    report = deliver(items, url, fmt=fmt, kind=kind, cursor=store.deliveries, options=options)
    if as_json:
        print_json(report.to_dict())
        return
    skipped = f"; {report.skipped} already delivered there, not sent again" if report.skipped else ""
    err_console.print(f"{len(items)} {kind} as {fmt} to {report.destination}. This run: {report.tally.describe()}"
                      f"{skipped}", highlight=False)
