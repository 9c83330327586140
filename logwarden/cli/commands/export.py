"""`logwarden export`: stored records to a SIEM format, a file/stdout, or forwarded (HEC, syslog)."""

from __future__ import annotations

import os

import click

from logwarden.cli.common import (
    db_option,
    err_console,
    handle_errors,
    open_for_writing,
    open_store_from,
    parse_time,
    write_lines,
)
from logwarden.errors import ConfigError
from logwarden.schemas import CATEGORIES, RISK_LEVELS

FORMATS = ("jsonl", "ecs", "ocsf", "splunk-hec", "cef")
KINDS = ("records", "incidents")
PAGE = 1000


@click.command()
@click.option("--format", "fmt", type=click.Choice(FORMATS), required=True, help="Output format.")
@click.option("--kind", type=click.Choice(KINDS), default="records", show_default=True,
              help="What to export: risk records, or incidents (jsonl, ecs, ocsf: OCSF Incident Finding).")
@click.option("--since", default=None, help="Only records whose last event is at/after T: ISO time or 15m/24h/7d.")
@click.option("--min-risk", type=click.Choice(RISK_LEVELS), default=None, help="Only records at or above this level.")
@click.option("--category", type=click.Choice(CATEGORIES), multiple=True, help="Only these categories.")
@click.option("--out", default="-", show_default=True, help="File to write ('-' = stdout).")
@click.option("--forward", default=None,
              help="Send instead of writing: https://host:8088/services/collector/event (splunk-hec) or "
                   "syslog://host:514 / syslog+tcp://host:514 (cef).")
@click.option("--token-env", default="SPLUNK_HEC_TOKEN", show_default=True, help="Env var with the HEC token.")
@click.option("--insecure", is_flag=True, help="Do not verify the HEC server's TLS certificate.")
@db_option
@handle_errors
def export(fmt, kind, since, min_risk, category, out, forward, token_env, insecure, db_url):
    """Export stored records as JSONL, ECS, OCSF, Splunk HEC or CEF (incidents: JSONL, ECS, OCSF)."""
    from logwarden.app.export import INCIDENT_FORMATS

    if kind == "incidents" and fmt not in INCIDENT_FORMATS:
        raise click.UsageError(f"--kind incidents exports as {', '.join(INCIDENT_FORMATS)}")
    target = open_for_writing(out) if out != "-" and not forward else None  # a bad --out fails first
    store = open_store_from(db_url, readonly=True, create=False)
    lines = (_incident_lines if kind == "incidents" else _record_lines)(store, fmt, since, min_risk, category)
    if forward:
        _forward(fmt, lines, forward, token_env, insecure)
    elif target is None:
        for line in lines:
            click.echo(line)
    else:
        write_lines(target, lines)
    err_console.print(f"{len(lines)} {kind} exported as {fmt}" + (f" to {forward}" if forward else ""),
                      highlight=False)


def _record_lines(store, fmt, since, min_risk, category) -> list[str]:
    from logwarden.app.export import export_records
    from logwarden.app.store import RecordFilter

    filters = RecordFilter(since=parse_time(since), min_risk=min_risk, categories=tuple(category))
    return list(export_records(_all_records(store, filters), fmt))


def _incident_lines(store, fmt, since, min_risk, category) -> list[str]:
    from logwarden.app.export import export_incidents
    from logwarden.app.store import IncidentFilter

    found = store.incidents.query(IncidentFilter(min_risk=min_risk, since=parse_time(since)), limit=10**9)
    found = [i for i in found if not category or i.category in category]
    return list(export_incidents(found, fmt))


def _all_records(store, filters):
    """Page through the filtered records in SQL (never the whole table in one query)."""
    records, offset = [], 0
    while page := store.query_records(filters, order_by="last_ts", descending=False, limit=PAGE, offset=offset):
        records += page
        offset += len(page)
    return records


def _forward(fmt: str, lines: list[str], url: str, token_env: str, insecure: bool) -> None:
    from logwarden.app.export import forward_splunk_hec, forward_syslog

    if url.startswith(("http://", "https://")):
        if fmt != "splunk-hec":
            raise ConfigError("an http(s) --forward is a Splunk HEC endpoint: use --format splunk-hec")
        token = os.environ.get(token_env)
        if not token:
            raise ConfigError(f"set the HEC token in ${token_env} (or choose another with --token-env)")
        forward_splunk_hec(lines, url, token=token, verify_tls=not insecure)
    elif url.startswith("syslog"):
        forward_syslog(lines, url)
    else:
        raise ConfigError(f"--forward {url!r}: use https://…/services/collector/event or syslog[+tcp]://host:port")
