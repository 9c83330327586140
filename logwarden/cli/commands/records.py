"""`logwarden records list|show` and `logwarden db info`: reading the store from the terminal."""

from __future__ import annotations

import sys

import click
from rich.table import Table

from logwarden.app.config import get_settings
from logwarden.app.pipeline import RunOptions
from logwarden.cli.common import (
    db_option,
    db_origin,
    engine_options,
    err_console,
    handle_errors,
    json_option,
    make_engine_options,
    open_store_from,
    out_console,
    print_json,
)
from logwarden.cli.terminal import shown, shown_block
from logwarden.schemas import CATEGORIES, RISK_LEVELS
from logwarden.schemas.record import STATUSES


@click.group()
def records() -> None:
    """List and show stored risk records."""


@records.command("list")
@click.option("--min-risk", type=click.Choice(RISK_LEVELS), default=None, help="Only records at or above this level.")
@click.option("--category", type=click.Choice(CATEGORIES), multiple=True, help="Only these categories (repeatable).")
@click.option("--status", type=click.Choice(STATUSES), multiple=True, help="Only these review statuses.")
@click.option("--source", multiple=True, help="Only records from these source paths.")
@click.option("--search", default=None, help="Free text over anomaly, trace, recommendation and indicators.")
@click.option("--pending", is_flag=True, help="Only records awaiting the model's review (a run's budget ran out).")
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True,
              help="Most records to print; 0 = all. When more match, stderr says how many.")
@db_option
@json_option
@handle_errors
def list_records(min_risk, category, status, source, search, pending, limit, db_url, as_json):
    """List records, riskiest and newest first."""
    from logwarden.app.store import RecordFilter

    store = open_store_from(db_url, readonly=True)
    filters = RecordFilter(min_risk=min_risk, categories=tuple(category), statuses=tuple(status),
                           sources=tuple(source), text=search, pending=pending)
    total = store.count_records(filters)
    rows = store.query_records(filters, order_by="risk_score", descending=True, limit=limit or total)
    counted = f"{len(rows)} of {total} matching records" + (" (--limit 0 shows all)" if len(rows) < total else "")
    err_console.print(counted, highlight=False)
    if as_json:
        print_json([r.model_dump(mode="json") for r in rows])
        return
    table = Table(show_header=True, header_style="bold")
    for column in ("id", "risk", "category", "source", "lines", "rules", "anomaly"):
        table.add_column(column, overflow="fold")
    for r in rows:
        table.add_row(*map(shown, (r.id[:12], r.risk_level, r.category, r.source, f"{r.line_start}-{r.line_end}",
                                   ",".join(r.detections), r.anomaly[:100])))
    out_console.print(table)


@records.command("show")
@click.argument("record_id")
@db_option
@json_option
@handle_errors
def show_record(record_id, db_url, as_json):
    """Show one record (an id or a unique id prefix)."""
    store = open_store_from(db_url, readonly=True)
    record = store.get_record(record_id)
    if record is None:
        click.echo(f"no record with id {shown(repr(record_id))}", err=True)
        sys.exit(1)
    if as_json:
        print_json(record.model_dump(mode="json"))
        return
    for key, value in record.model_dump(mode="json", exclude={"raw_model_output", "engine_stats"}).items():
        click.echo(f"{key}: {shown(value)}")


@records.command("explain")
@click.argument("record_id")
@engine_options
@db_option
@json_option
@handle_errors
def explain_record(record_id, db_url, as_json, **engine_kw):
    """The model's narrative of one record, streamed: its evidence lines through triage's digest,
    grammar and grounding (rules' records carry their rule's own text; this asks the model)."""
    from logwarden.app.backends import open_engine
    from logwarden.app.explain import explain

    store = open_store_from(db_url)
    record = store.get_record(record_id)
    if record is None:
        click.echo(f"no record with id {record_id!r}", err=True)
        sys.exit(1)
    engine = open_engine(make_engine_options(engine_kw))
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
