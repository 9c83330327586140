"""`logwarden incidents list|show|review|group`: attack stories from the terminal.

`list`, `show` and `review` take the ids `list` prints (`inc-` and 16 hex digits) or any unique
prefix, with or without `inc-`. Reading commands never create a store; `group` regroups the whole
store (analyze and watch group what they store on their own) and, with a model, writes stories.
"""

from __future__ import annotations

import sys
import threading

import click

from logwarden.app.config import get_settings
from logwarden.cli.columns import Column, fit_table, left_out_note
from logwarden.cli.common import (
    LEVEL_STYLES,
    StatusChoice,
    StopRequest,
    db_option,
    err_console,
    exit_at_once,
    handle_errors,
    json_option,
    known_id,
    load_engine,
    login,
    make_engine_options,
    model_options,
    open_store_from,
    out_console,
    parse_time,
    print_json,
    review_options,
    review_text,
    signal_name,
)
from logwarden.cli.terminal import cell, shown, shown_block
from logwarden.errors import RunStopped
from logwarden.schemas import RISK_LEVELS
from logwarden.schemas.incident import Incident


@click.group()
def incidents() -> None:
    """List, show, review and regroup incidents: records of one attack story across windows, files and hosts."""


@incidents.command("list")
@click.option("--min-risk", type=click.Choice(RISK_LEVELS), default=None, help="Only incidents at or above this level.")
@click.option("--status", type=StatusChoice(), multiple=True, help="Only these review states (repeatable).")
@click.option("--host", default=None, help="Only incidents on a host containing this text (any case).")
@click.option("--since", default=None, help="Only incidents whose last event is at/after T: ISO time or 15m/24h/7d.")
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True, help="Most incidents; 0 = all.")
@db_option
@json_option
@handle_errors
def list_incidents(min_risk, status, host, since, limit, db_url, as_json):
    """List incidents, riskiest and newest first."""
    from logwarden.app.store import IncidentFilter

    start = parse_time(since)
    store = open_store_from(db_url, readonly=True, create=False)
    filters = IncidentFilter(min_risk=min_risk, statuses=tuple(status), host=host, since=start)
    rows = store.incidents.query(filters, limit=limit or 10**9)
    err_console.print(f"{len(rows)} incidents", highlight=False)
    if as_json:
        print_json([i.model_dump(mode="json") for i in rows])
        return
    if out_console.is_terminal:
        _print_table(rows)
        return
    for i in rows:
        out_console.print(f"{i.id}  {_when(i)}  {i.risk_level:<8}  {i.status:<14} {len(i.record_ids):>4} records  "
                          f"{shown(i.title)}", highlight=False, soft_wrap=True)


# As `records list`'s (cli/columns.py): the essential five first, the others go first when it is narrow.
TABLE_COLUMNS = (Column("risk", most=8, least=8), Column("first (UTC)", most=16, least=16),
                 Column("hosts", most=26, least=5), Column("title", most=60, least=14), Column("id", most=20, least=20),
                 Column("status", most=14, least=8, drop=2), Column("records", most=7, drop=1, justify="right"))


def _print_table(rows: list[Incident]) -> None:
    cells = [[cell(i.risk_level, LEVEL_STYLES[i.risk_level]), _when(i), ", ".join(i.hosts) or "-", i.title, i.id,
              i.status, f"{len(i.record_ids):,}"] for i in rows]
    table, dropped = fit_table(TABLE_COLUMNS, cells, out_console.width)
    out_console.print(table)
    if dropped:
        err_console.print(left_out_note(dropped, out_console.width), highlight=False, markup=False)


def _when(i: Incident) -> str:
    return f"{i.first_ts:%Y-%m-%d %H:%M}" if i.first_ts else "-               "


@incidents.command("show")
@click.argument("incident_id")
@db_option
@json_option
@handle_errors
def show_incident(incident_id, db_url, as_json):
    """Show one incident: its story, tactics, entities, and its records per host in time order."""
    store = open_store_from(db_url, readonly=True, create=False)
    incident = store.incidents.get(known_id(store.incidents.resolve_id(incident_id), incident_id, "incident"))
    members = store.incidents.members(incident.id)
    if as_json:
        print_json({**incident.model_dump(mode="json"), "records": [_member(r) for r in members],
                    "reviews": [_review(r) for r in store.incidents.reviews(incident.id)]})
        return
    _print_incident(incident, members)
    for h in store.incidents.reviews(incident.id):
        _echo_shown(f"review: {h['created_at']:%Y-%m-%d %H:%M:%S}  {h['old_status'] or '-'} -> {review_text(h)}  "
                    f"{h['reviewer'] or '-'}" + (f"  {h['note']}" if h["note"] else ""))


def _member(r) -> dict:
    return {"id": r.id, "first_ts": r.first_ts.isoformat() if r.first_ts else None, "host": r.host,
            "risk_level": r.risk_level, "category": r.category, "source": r.source, "anomaly": r.anomaly,
            "techniques": [t.id for t in r.techniques]}


def _review(row: dict) -> dict:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}


def _print_incident(i: Incident, members) -> None:
    echo = _echo_shown
    echo(f"{i.id}  [{i.risk_level.upper()}] {i.category}  status: {review_text(i)}  owner: {i.owner or '-'}")
    echo(f"title: {i.title}" + ("" if i.story_by == "llm" else "  (deterministic)"))
    echo(f"time: {i.first_ts or '-'} .. {i.last_ts or '-'}   hosts: {', '.join(i.hosts) or '-'}")
    if i.summary:
        echo(f"story ({i.model or 'model'}): {i.summary}")
    for label, values in (("stages", i.stages), ("next steps", i.next_steps), ("tactics", i.tactics),
                          ("techniques", i.techniques), ("linked by", i.pivots)):
        if values:
            echo(f"{label}: {'; '.join(values)}")
    for kind, values in i.entities.items():
        echo(f"{kind}: {', '.join(values)}")
    click.echo("timeline:")
    for host in dict.fromkeys(r.host or "-" for r in members):
        click.echo(f"  {shown(host)}")
        for r in (m for m in members if (m.host or "-") == host):
            when = f"{r.first_ts:%Y-%m-%d %H:%M:%S}" if r.first_ts else "-"
            echo(f"    {when}  {r.id[:12]}  {r.risk_level:<8} {r.category:<20} {' '.join(r.anomaly.split())[:100]}")
    if i.analyst_note:
        echo(f"note: {i.analyst_note}")


def _echo_shown(text: str) -> None:
    click.echo(shown_block(text))


@incidents.command("review")
@click.argument("incident_id")
@review_options
@click.option("--owner", default=None, help="Who owns the incident now.")
@db_option
@json_option
@handle_errors
def review_incident(incident_id, status, reason, note, reviewer, owner, db_url, as_json):
    """Review an incident: its state (open, acknowledged, in_progress, closed with --reason), owner
    and/or note. A new state goes to each of its records too, their history naming the incident."""
    if status is None and note is None and owner is None:
        raise click.UsageError("give --status, --owner and/or --note")
    store = open_store_from(db_url, create=False)
    found = known_id(store.incidents.resolve_id(incident_id), incident_id, "incident")
    written = store.incidents.review(found, status=status, reason=reason, owner=owner, note=note,
                                     reviewer=reviewer or login())
    if as_json:
        print_json(written)
        return
    members = f" ({written['records']} record{'s' if written['records'] != 1 else ''} too)" if status else ""
    err_console.print(f"{found}: {review_text(written)}{members}" + (f" — {note}" if note else ""),
                      highlight=False, markup=False)



@incidents.command("group")
@click.option("--rules-only", is_flag=True, help="Only the deterministic grouping and titles; no model stories.")
@model_options(budget=True)
@db_option
@json_option
@handle_errors
def group_incidents(rules_only, llm_budget, db_url, as_json, **engine_kw):
    """Regroup every stored record into incidents (idempotent); with a model, write the missing stories.
    SIGINT/SIGTERM stop it within seconds (128 + the signal): a regrouping not finished leaves the
    incidents as they were, the stories written so far are kept."""
    from logwarden.app.incidents import IncidentOptions
    from logwarden.app.incidents.regroup import regroup
    from logwarden.app.review import default_budget
    from logwarden.cli.progress import RunProgress

    store = open_store_from(db_url, create=False)
    options = IncidentOptions.from_settings(get_settings())
    engine = None if rules_only else load_engine(make_engine_options(engine_kw))
    cancelled = threading.Event()
    stop = StopRequest(lambda: _cancel(cancelled, engine))
    budget = llm_budget or get_settings().llm_budget
    progress = RunProgress([], err_console, model=engine is not None, phases=("grouping", "stories"),
                           budget=default_budget(budget, engine) if engine is not None else None)
    try:
        with stop.installed(), progress as update:
            update("phase:grouping", 0)
            regrouped = regroup(store, options, cancelled=cancelled)
            report = {"incidents": len(regrouped.incidents), "removed": len(regrouped.removed)}
            if engine is not None:
                report.update(_stories(store, engine, regrouped.to_tell, options, budget, cancelled, update))
                report["incidents"] += report["stories_alone"]  # lone records their stories made incidents
    except RunStopped:
        pass
    if stop.signum is not None:
        err_console.print(f"stopped by {signal_name(stop.signum)}", highlight=False, markup=False)
        if engine is not None:
            exit_at_once(128 + stop.signum)
        sys.exit(128 + stop.signum)
    if as_json:
        print_json(report)
        return
    err_console.print(", ".join(f"{k}: {v}" for k, v in report.items()), highlight=False)


def _cancel(cancelled: threading.Event, engine) -> None:
    cancelled.set()
    if engine is not None:
        engine.cancel()


def _stories(store, engine, incidents_found, options, llm_budget: str, cancelled: threading.Event, progress) -> dict:
    from logwarden.app.incidents.story import write_stories

    stats = write_stories(store, engine, incidents_found, llm_budget=llm_budget, limit=options.stories,
                          max_new_tokens=options.story_tokens, cancelled=cancelled, progress=progress)
    return {f"stories_{name}": value for name, value in stats.as_dict().items()}
