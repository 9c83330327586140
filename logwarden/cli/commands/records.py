"""`logwarden records list|show|review` and `logwarden db info`: reading and judging the store from the terminal.

`records list` prints a table on a terminal and plain tab-separated lines when piped (one record a
line, so `grep 203.0.113.9` finds the records of an address). Every command takes the 12-character
ids it prints, or any unique prefix. Commands here never create a store.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from logwarden.app.backends import facts_line, record_model_facts
from logwarden.app.config import get_settings
from logwarden.app.run_options import RunOptions
from logwarden.app.textgate import rejected_note
from logwarden.cli.columns import Column, fit_table, left_out_note
from logwarden.cli.common import (
    LEVEL_STYLES,
    StatusChoice,
    db_option,
    db_origin,
    err_console,
    handle_errors,
    json_option,
    known_id,
    load_engine,
    login,
    make_engine_options,
    model_options,
    open_store_from,
    out_console,
    print_json,
    review_options,
    review_text,
    time_range,
)
from logwarden.cli.terminal import cell, shown, shown_block
from logwarden.schemas import CATEGORIES, RISK_LEVELS, RiskRecord

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
@click.option("--status", type=StatusChoice(), multiple=True, help="Only these review states (repeatable).")
@click.option("--host", default=None, help="Only records whose host contains this text (any case).")
@click.option("--source", multiple=True,
              help="Only records from this source (repeatable): its full path, a unique end of it or its file name.")
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
    sources = tuple(map(store.resolve_source, source))
    filters = RecordFilter(min_risk=min_risk, categories=tuple(category), statuses=tuple(status),
                           sources=sources, text=search, host=host, since=start, until=end, pending=pending)
    total = store.count_records(filters)
    descending = sort in ("risk", "time")
    rows = store.query_records(filters, order_by=SORTS[sort], descending=descending, limit=limit or total)
    counted = f"{len(rows)} of {total} matching records" + (" (--limit 0 shows all)" if len(rows) < total else "")
    err_console.print(counted, highlight=False)
    if as_json:
        print_json([r.model_dump(mode="json") for r in rows])
    elif out_console.is_terminal:
        _print_table(rows)
    else:
        _print_tsv(rows)


# The essential columns first (never dropped, only shortened); the rest go, in `drop` order, when the
# terminal is too narrow for them (cli/columns.py): at 80 columns the essential five fill it.
TABLE_COLUMNS = (Column("risk", most=8, least=8), Column("last event (UTC)", most=19, least=19),
                 Column("host", most=26, least=10), Column("rule", most=32, least=12), Column("id", most=12, least=12),
                 Column("status", most=14, least=8, drop=4), Column("category", most=20, least=10, drop=2),
                 Column("source", most=24, least=10, drop=1), Column("anomaly", most=200, least=20, drop=3))


def _print_table(rows: list[RiskRecord]) -> None:
    """One line a record, the level in its colour; what does not fit the terminal is left out, and said."""
    cells = [[cell(r.risk_level, LEVEL_STYLES[r.risk_level]), _when(r), r.host or "-", rule_of(r), r.id[:12],
              r.status, r.category, Path(r.source).name, " ".join(r.anomaly.split())] for r in rows]
    table, dropped = fit_table(TABLE_COLUMNS, cells, out_console.width)
    out_console.print(table)
    if dropped:
        err_console.print(left_out_note(dropped, out_console.width), highlight=False, markup=False)


def rule_of(r: RiskRecord) -> str:
    """The record's first rule (and how many more), or the model's category when no rule fired."""
    if not r.detections:
        return f"model: {r.category}"
    return r.detections[0] + (f" +{len(r.detections) - 1}" if len(r.detections) > 1 else "")


def _print_tsv(rows: list[RiskRecord]) -> None:
    click.echo("\t".join(TSV_COLUMNS))
    for r in rows:
        values = (r.id[:12], _when(r), r.risk_level, r.status, r.host or "-", r.category, r.source,
                  f"{r.line_start}-{r.line_end}", ",".join(r.indicators.ips) or "-",
                  ",".join(r.indicators.users) or "-", ",".join(r.rule_names()) or "-", r.anomaly)
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
    record = store.get_record(known_id(store.resolve_id(record_id), record_id, "record"))
    facts = _model_facts(record, store)
    history = store.list_reviews(record.id)
    if as_json:
        print_json({**record.model_dump(mode="json"), "model_facts": facts,
                    "reviews": [_history_row(h) for h in history]})
        return
    _print_record(record, store, facts)
    _print_history(history)


def _history_row(h) -> dict:
    return {name: getattr(h, name) for name in h.__slots__} | {"created_at": h.created_at.isoformat()}


def _print_history(history) -> None:
    if history:
        click.echo("history:")
    for h in history:
        via = f"  (incident {h.incident_id})" if h.incident_id else ""
        _echo_shown(f"  {h.created_at:%Y-%m-%d %H:%M:%S}  {h.old_status or '-'} -> {review_text(h)}  "
                    f"{h.reviewer or '-'}{via}" + (f"  {h.note}" if h.note else ""))


def _model_facts(record: RiskRecord, store) -> dict:
    run = store.get_run(record.run_id) if record.run_id else None
    return record_model_facts(record, run.config if run else None)


def _print_record(r: RiskRecord, store, facts: dict) -> None:
    echo = _echo_shown
    echo(f"{r.id}  [{r.risk_level.upper()}] {r.category} ({r.decided_by})  status: {review_text(r)}")
    echo(f"source: {r.source} lines {r.line_start}-{r.line_end} ({r.line_count})  host: {r.host or '-'}")
    echo(f"time: {r.first_ts or '-'} .. {r.last_ts or '-'}")
    echo(facts_line(facts))
    _print_incident_of(r, store)
    for label, text in (("anomaly", r.anomaly), ("trace", r.trace), ("recommendation", r.recommendation)):
        echo(f"{label}: {text}")
    if r.rejected:
        echo(rejected_note(r.rejected))
    if r.techniques:
        echo("ATT&CK: " + ", ".join(f"{t.id} {t.name}".strip() for t in r.techniques))
    if r.detections:
        echo("rules: " + ", ".join(name if name == rule_id else f"{name} ({rule_id})"
                                   for name, rule_id in zip(r.rule_names(), r.detections)))
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
@review_options
@db_option
@json_option
@handle_errors
def review_record(record_id, status, reason, note, reviewer, db_url, as_json):
    """Review a record: move it to a state (open, acknowledged, in_progress, closed; closed needs
    --reason true_positive, benign_positive, false_positive or duplicate) and/or note it. Every change
    is a row of its history (`records show`)."""
    if status is None and note is None:
        raise click.UsageError("give --status and/or --note")
    store = open_store_from(db_url, create=False)
    found = known_id(store.resolve_id(record_id), record_id, "record")
    written = store.add_review(found, status=status, reason=reason, note=note, reviewer=reviewer or login())
    if as_json:
        print_json(written)
        return
    err_console.print(f"{found[:12]}: {review_text(written)}" + (f" — {note}" if note else ""), highlight=False,
                      markup=False)


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
    record = store.get_record(known_id(store.resolve_id(record_id), record_id, "record"))
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
