"""`logwarden report --html OUT`: the store's records as one self-contained HTML file (summary,
charts, top rules and hosts, the incidents holding them with their stories and timelines, records
with their evidence) to hand to someone without the UI. Never creates a store."""

from __future__ import annotations

from dataclasses import replace

import click

from logwarden.cli.common import (
    db_option,
    err_console,
    handle_errors,
    open_for_writing,
    open_store_from,
    time_filter_hint,
    time_range,
    write_lines,
)
from logwarden.schemas import RISK_LEVELS

PAGE = 1000


@click.command()
@click.option("--html", "out", required=True, help="File to write ('-' = stdout).")
@click.option("--min-risk", type=click.Choice(RISK_LEVELS), default=None, help="Only records at or above this level.")
@click.option("--since", default=None,
              help="Only records whose last event is at/after T: ISO time or 15m/24h/7d (the logs' own times).")
@click.option("--until", default=None,
              help="Only records whose last event is at/before T: ISO time or 15m/24h/7d (the logs' own times).")
@click.option("--title", default="logwarden report", show_default=True, help="The report's title.")
@db_option
@handle_errors
def report(out, min_risk, since, until, title, db_url):
    """Write the records and their incidents as a self-contained HTML report (no script, nothing fetched
    from elsewhere; evidence capped per record, all of it stays in the store)."""
    target = open_for_writing(out) if out != "-" else None  # a bad --html fails before any work
    try:
        html, count, incidents, hint = _render(db_url, min_risk, since, until, title)
    except BaseException:
        if target is not None:
            target.discard()  # no stray temporary file beside --html when the store cannot be read
        raise
    if target is None:
        click.echo(html, nl=False)
    else:
        write_lines(target, [html])
        err_console.print(f"wrote {count} records and {incidents} incidents to {target.name}", highlight=False,
                          markup=False)
    if hint:
        err_console.print(hint, highlight=False, markup=False)


def _render(db_url, min_risk, since, until, title) -> tuple[str, int, int, str | None]:
    """The report's HTML, how many records and incidents it holds, and why it is empty where a time
    filter emptied it."""
    from logwarden.app.store import RecordFilter
    from logwarden.ui.report import render_report

    start, end = time_range(since, until)
    store = open_store_from(db_url, create=False)
    filters = RecordFilter(min_risk=min_risk, since=start, until=end)
    records, offset = [], 0
    while page := store.query_records(filters, order_by="risk_score", descending=True, limit=PAGE, offset=offset):
        records += page
        offset += len(page)
    incident_of = store.incidents.of_records(r.id for r in records)
    incidents = list(store.incidents.get_many(sorted(set(incident_of.values()))).values())
    source = store.info().get("path") or store.info()["url"]
    html = render_report(records, incidents=incidents, title=title, source=source)
    return html, len(records), len(incidents), _empty_hint(store, filters) if not records and (start or end) else None


def _empty_hint(store, filters) -> str | None:
    untimed = replace(filters, since=None, until=None)
    count = store.count_records(untimed)
    return time_filter_hint("records", count, *store.last_event_span(untimed)) if count else None
