"""`logwarden records list|show|review` and `logwarden db info`: reading and judging the store from the terminal.

`records list` prints a table on a terminal and plain tab-separated lines when piped (one record a
line, so `grep 203.0.113.9` finds the records of an address). Every command takes the 12-character
ids it prints, or any unique prefix. Commands here never create a store.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.table import Table

from logwarden.app.config import get_settings
from logwarden.app.pipeline import RunOptions
from logwarden.app.textgate import rejected_note
from logwarden.cli.common import (
    LEVEL_STYLES,
    db_option,
    db_origin,
    err_console,
    handle_errors,
    json_option,
    load_engine,
    make_engine_options,
    model_options,
    open_store_from,
    out_console,
    print_json,
    time_range,
)
from logwarden.cli.terminal import add_row, cell, shown, shown_block
from logwarden.schemas import CATEGORIES, RISK_LEVELS, RiskRecord
from logwarden.schemas.record import STATUSES

SORTS = {"risk": "risk_score", "time": "last_ts", "host": "host", "status": "status", "category": "category",
         "source": "source"}
TSV_COLUMNS = ("id", "last_event", "risk", "status", "host", "category", "source", "lines", "ips", "users",
               "rules", "anomaly")


@click.group()
def records() -> None:
    """List, show and review stored risk records."""


@records.command("list")
@click.option("--min-risk", type=click.Choice(RISK_LEVELS), default=None, help="Only records at or above this level.")
@click.option("--category", type=click.Choice(CATEGORIES), multiple=True, help="Only these categories (repeatable).")
@click.option("--status", type=click.Choice(STATUSES), multiple=True, help="Only these review statuses (repeatable).")
@click.option("--host", default=None, help="Only records whose host contains this text (any case).")
@click.option("--source", multiple=True, help="Only records from these source paths.")
@click.option("--since", default=None, help="Only records whose last event is at/after T: ISO time or 15m/24h/7d.")
@click.option("--until", default=None, help="Only records whose last event is at/before T: ISO time or 15m/24h/7d.")
@click.option("--search", default=None, help="Free text over anomaly, trace, recommendation and indicators.")
@click.option("--pending", is_flag=True, help="Only records awaiting the model's review (a run's budget ran out).")
@click.option("--sort", type=click.Choice(list(SORTS)), default="risk", show_default=True,
              help="Order: risk (riskiest first), time (newest first), host, status, category, source.")
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True,
              help="Most records to print; 0 = all. When more match, stderr says how many.")
@db_option
@json_option
@handle_errors
def list_records(min_risk, category, status, host, source, since, until, search, pending, sort, limit, db_url, as_json):
    """List records, riskiest and newest first (a table on a terminal, tab-separated when piped)."""
    from logwarden.app.store import RecordFilter

    start, end = time_range(since, until)
    store = open_store_from(db_url, readonly=True, create=False)
    filters = RecordFilter(min_risk=min_risk, categories=tuple(category), statuses=tuple(status),
                           sources=tuple(source), text=search, host=host, since=start, until=end, pending=pending)
    total = store.count_records(filters)
    descending = sort in ("risk", "time")
    rows = store.query_records(filters, order_by=SORTS[sort], descending=descending, limit=limit or total)
    counted = f"{len(rows)} of {total} matching records" + (" (--limit 0 shows all)" if len(rows) < total else "")
    err_console.print(counted, highlight=False)
    if as_json:
        print_json([r.model_dump(mode="json") for r in rows])
    elif out_console.is_terminal:
        out_console.print(_table(rows))
    else:
        _print_tsv(rows)


def _table(rows: list[RiskRecord]) -> Table:
    """One line a record, the level in its colour, the anomaly cut to the width left."""
    widths = {"id": 12, "last event (UTC)": 19, "risk": 8, "status": 14, "host": 26, "category": 20, "source": 24}
    cells = [[r.id[:12], _when(r), r.risk_level, r.status, r.host or "-", r.category, Path(r.source).name]
             for r in rows]
    sizes = [min(max([len(name), *(len(c[i]) for c in cells)]), most) for i, (name, most) in enumerate(widths.items())]
    room = max(20, out_console.width - sum(size + 3 for size in sizes) - 1)
    table = Table(show_header=True, header_style="bold")
    for name, size in zip(widths, sizes):
        table.add_column(name, no_wrap=True, overflow="ellipsis", min_width=size, max_width=size)
    table.add_column("anomaly", no_wrap=True, overflow="ellipsis", min_width=room, max_width=room)
    for r, row in zip(rows, cells):
        row[2] = cell(r.risk_level, LEVEL_STYLES[r.risk_level])
        add_row(table, *row, " ".join(r.anomaly.split()))
    return table


def _print_tsv(rows: list[RiskRecord]) -> None:
    click.echo("\t".join(TSV_COLUMNS))
    for r in rows:
        values = (r.id[:12], _when(r), r.risk_level, r.status, r.host or "-", r.category, r.source,
                  f"{r.line_start}-{r.line_end}", ",".join(r.indicators.ips) or "-",
                  ",".join(r.indicators.users) or "-", ",".join(r.detections) or "-", r.anomaly)
        click.echo("\t".join(_cell(shown(v)) for v in values))


def _cell(value: str) -> str:
    """One TSV cell: tabs and line breaks in log text would split the record."""
    return " ".join(str(value).split())


def _when(r: RiskRecord) -> str:
    return f"{r.last_ts:%Y-%m-%d %H:%M:%S}" if r.last_ts else "-"


@records.command("show")
@click.argument("record_id")
@db_option
@json_option
@handle_errors
def show_record(record_id, db_url, as_json):
    """Show one record: its assessment, numbered evidence lines with their parsed key fields, its reviews."""
    store = open_store_from(db_url, readonly=True, create=False)
    record = store.get_record(record_id)
    if record is None:
        click.echo(f"no record with id {shown(repr(record_id))}", err=True)
        sys.exit(1)
    if as_json:
        print_json(record.model_dump(mode="json"))
        return
    _print_record(record, store)


def _print_record(r: RiskRecord, store) -> None:
    echo = _echo_shown
    echo(f"{r.id}  [{r.risk_level.upper()}] {r.category} ({r.decided_by})  status: {r.status}")
    echo(f"source: {r.source} lines {r.line_start}-{r.line_end} ({r.line_count})  host: {r.host or '-'}")
    echo(f"time: {r.first_ts or '-'} .. {r.last_ts or '-'}")
    _print_incident_of(r, store)
    for label, text in (("anomaly", r.anomaly), ("trace", r.trace), ("recommendation", r.recommendation)):
        echo(f"{label}: {text}")
    if r.rejected:
        echo(rejected_note(r.rejected))
    if r.techniques:
        echo("ATT&CK: " + ", ".join(f"{t.id} {t.name}".strip() for t in r.techniques))
    if r.detections:
        echo("rules: " + ", ".join(r.detections))
    ind = {kind: values for kind, values in r.indicators.model_dump().items() if values}
    for kind, values in ind.items():
        echo(f"{kind}: {', '.join(values)}")
    _print_evidence(r, store)
    if r.analyst_note:
        echo(f"note: {r.analyst_note}")


def _print_incident_of(r: RiskRecord, store) -> None:
    found = store.incidents.of_records([r.id]).get(r.id)
    incident = store.incidents.get(found) if found else None
    if incident is not None:
        _echo_shown(f"incident: {incident.id} {incident.title} (`logwarden incidents show {incident.id}`)")


def _print_evidence(r: RiskRecord, store) -> None:
    """Numbered evidence lines, each under its parsed key fields (stored with the record; an older
    record's are parsed again from the stored text)."""
    from logwarden.app.keyfields import key_fields

    source = store.get_source(r.source, r.inode)
    fmt = source.format if source else None
    click.echo(f"evidence ({len(r.evidence.exemplars)} of {len(r.evidence.line_numbers)} lines shown):")
    for line in r.evidence.exemplars:
        fields = list(line.fields.items()) or key_fields(line.text, fmt)
        if fields:
            click.echo("           " + "  ".join(f"{shown(name)}={shown(value)}" for name, value in fields))
        click.echo(f"  {line.line_no:>7}  {shown(line.text)}")


@records.command("review")
@click.argument("record_id")
@click.option("--status", type=click.Choice(STATUSES), default=None,
              help="The new status (default: keep the current one; a note alone never changes it).")
@click.option("--note", default=None, help="Analyst note (replaces the record's current note).")
@click.option("--reviewer", default=None, help="Who reviewed it (default: the login name).")
@db_option
@json_option
@handle_errors
def review_record(record_id, status, note, reviewer, db_url, as_json):
    """Record a review: a status (new, confirmed, false_positive, resolved) and/or a note, in the audit trail."""
    if status is None and note is None:
        raise click.UsageError("give --status and/or --note")
    store = open_store_from(db_url, create=False)
    found = store.resolve_id(record_id)
    if found is None:
        click.echo(f"no record with id {record_id!r}", err=True)
        sys.exit(1)
    written = store.add_review(found, status=status, note=note, reviewer=reviewer or _login())
    if as_json:
        print_json({"id": found, "status": written, "note": note})
        return
    err_console.print(f"{found[:12]}: {written}" + (f" — {note}" if note else ""), highlight=False, markup=False)


def _login() -> str | None:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def _echo_shown(text: str) -> None:
    """A line of a record's text: log values in it are shown, never obeyed by the terminal."""
    click.echo(shown_block(text))


@records.command("explain")
@click.argument("record_id")
@model_options()
@db_option
@json_option
@handle_errors
def explain_record(record_id, db_url, as_json, **engine_kw):
    """The model's narrative of one record, streamed: its evidence lines through triage's digest,
    grammar and grounding (rules' records carry their rule's own text; this asks the model)."""
    from logwarden.app.explain import explain

    store = open_store_from(db_url)
    record = store.get_record(record_id)
    if record is None:
        click.echo(f"no record with id {record_id!r}", err=True)
        sys.exit(1)
    engine = load_engine(make_engine_options(engine_kw))
    options = RunOptions.from_settings(get_settings())
    explanation = explain(record, engine, options)
    out = sys.stderr if as_json else sys.stdout
    for piece in explanation.stream:  # the model may repeat what the log said: shown, never obeyed
        out.write(shown_block(piece))
        out.flush()
    out.write("\n")
    if as_json:
        print_json(explanation.report())


@click.group()
def db() -> None:
    """Inspect the store."""


@db.command("info")
@db_option
@json_option
@handle_errors
def db_info(db_url, as_json):
    """Store URL, schema version, row counts and file size (read-only: creates and migrates nothing)."""
    info = open_store_from(db_url, readonly=True, current=False).info()
    info["url_from"] = db_origin()
    if as_json:
        print_json(info)
        return
    for key, value in info.items():
        click.echo(f"{key}: {shown(value)}")


@db.command("migrate")
@db_option
@json_option
@handle_errors
def db_migrate(db_url, as_json):
    """Bring the store's schema up to this logwarden's (reading commands never change it)."""
    from logwarden.app.store import LATEST_VERSION

    applied = open_store_from(db_url).applied
    if as_json:
        print_json({"applied": applied, "schema_version": LATEST_VERSION})
        return
    click.echo(f"schema version {LATEST_VERSION}" + (f" (applied {', '.join(map(str, applied))})" if applied
                                                     else " (nothing to do)"))
