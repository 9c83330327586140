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
from logwarden.cli.common import (
    LEVEL_STYLES,
    StopRequest,
    db_option,
    err_console,
    exit_at_once,
    handle_errors,
    json_option,
    load_engine,
    make_engine_options,
    model_options,
    open_store_from,
    out_console,
    parse_time,
    print_json,
    signal_name,
)
from logwarden.cli.terminal import shown, shown_block
from logwarden.errors import RunStopped
from logwarden.schemas import RISK_LEVELS
from logwarden.schemas.incident import Incident
from logwarden.schemas.record import STATUSES


@click.group()
def incidents() -> None:
    """List, show, review and regroup incidents: records of one attack story across windows, files and hosts."""


@incidents.command("list")
@click.option("--min-risk", type=click.Choice(RISK_LEVELS), default=None, help="Only incidents at or above this level.")
@click.option("--status", type=click.Choice(STATUSES), multiple=True, help="Only these review statuses (repeatable).")
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
    for i in rows:
        out_console.print(f"{i.id}  {_when(i)}  ", end="")
        out_console.print(f"{i.risk_level:<8}", style=LEVEL_STYLES[i.risk_level], end="")
        out_console.print(f"  {i.status:<14} {len(i.record_ids):>4} records  {shown(i.title)}", highlight=False)


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
    incident = store.incidents.get(incident_id)
    if incident is None:
        click.echo(f"no incident with id {shown(repr(incident_id))}", err=True)
        sys.exit(1)
    members = store.incidents.members(incident.id)
    if as_json:
        print_json({**incident.model_dump(mode="json"), "records": [_member(r) for r in members],
                    "reviews": [_review(r) for r in store.incidents.reviews(incident.id)]})
        return
    _print_incident(incident, members)


def _member(r) -> dict:
    return {"id": r.id, "first_ts": r.first_ts.isoformat() if r.first_ts else None, "host": r.host,
            "risk_level": r.risk_level, "category": r.category, "source": r.source, "anomaly": r.anomaly,
            "techniques": [t.id for t in r.techniques]}


def _review(row: dict) -> dict:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}


def _print_incident(i: Incident, members) -> None:
    echo = _echo_shown
    echo(f"{i.id}  [{i.risk_level.upper()}] {i.category}  status: {i.status}  owner: {i.owner or '-'}")
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
@click.option("--status", type=click.Choice(STATUSES), default=None, help="The new status (default: keep it).")
@click.option("--owner", default=None, help="Who owns the incident now.")
@click.option("--note", default=None, help="Analyst note (replaces the incident's current note).")
@click.option("--reviewer", default=None, help="Who reviewed it (default: the login name).")
@db_option
@json_option
@handle_errors
def review_incident(incident_id, status, owner, note, reviewer, db_url, as_json):
    """Review an incident: status (new, confirmed, false_positive, resolved), owner and/or note, in its trail."""
    if status is None and note is None and owner is None:
        raise click.UsageError("give --status, --owner and/or --note")
    store = open_store_from(db_url, create=False)
    found = store.incidents.resolve_id(incident_id)
    if found is None:
        click.echo(f"no incident with id {shown(repr(incident_id))}", err=True)
        sys.exit(1)
    written = store.incidents.review(found, status=status, owner=owner, note=note, reviewer=reviewer or _login())
    if as_json:
        print_json(written)
        return
    err_console.print(f"{found}: {written['status']}" + (f" — {note}" if note else ""), highlight=False,
                      markup=False)


def _login() -> str | None:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


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
    from logwarden.app.incidents import IncidentOptions, regroup

    store = open_store_from(db_url, create=False)
    options = IncidentOptions.from_settings(get_settings())
    engine = None if rules_only else load_engine(make_engine_options(engine_kw))
    cancelled = threading.Event()
    stop = StopRequest(lambda: _cancel(cancelled, engine))
    try:
        with stop.installed():
            regrouped = regroup(store, options, cancelled=cancelled)
            report = {"incidents": len(regrouped.incidents), "removed": len(regrouped.removed)}
            if engine is not None:
                report.update(_stories(store, engine, regrouped.incidents, options, llm_budget, cancelled))
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


def _stories(store, engine, incidents_found, options, llm_budget, cancelled: threading.Event) -> dict:
    from logwarden.app.incidents.story import write_stories

    settings = get_settings()
    stats = write_stories(store, engine, incidents_found, llm_budget=llm_budget or settings.llm_budget,
                          limit=options.stories, max_new_tokens=options.story_tokens, cancelled=cancelled)
    return {f"stories_{name}": value for name, value in stats.as_dict().items()}
