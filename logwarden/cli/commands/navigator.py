"""`logwarden navigator --out layer.json`: the store's records as an ATT&CK Navigator layer (as
Zircolite's `--navigator`), to open at https://mitre-attack.github.io/attack-navigator/ (Open
Existing Layer → Upload from local). Never creates a store."""

from __future__ import annotations

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
    time_range,
    write_lines,
)
from logwarden.cli.terminal import json_text
from logwarden.schemas import CATEGORIES, RISK_LEVELS

PAGE = 1000


@click.command()
@click.option("--out", default="-", show_default=True, help="Layer file to write ('-' = stdout).")
@click.option("--min-risk", type=click.Choice(RISK_LEVELS), default=None, help="Only records at or above this level.")
@click.option("--category", type=click.Choice(CATEGORIES), multiple=True, help="Only these categories (repeatable).")
@click.option("--status", type=StatusChoice(), multiple=True,
              help="Only records in these review states (repeatable), e.g. closed.")
@click.option("--since", default=None, help="Only records whose last event is at/after T: ISO time or 15m/24h/7d.")
@click.option("--until", default=None, help="Only records whose last event is at/before T: ISO time or 15m/24h/7d.")
@click.option("--name", default="logwarden", show_default=True, help="The layer's name in the Navigator.")
@json_option
@db_option
@handle_errors
def navigator(out, min_risk, category, status, since, until, name, as_json, db_url):
    """Export the records' ATT&CK techniques as a Navigator layer (format 4.5).

    Each technique's score is the number of records naming it; its comment the rules that fired
    (with how many records each) and what the records said. With --json the summary of what was
    written is printed on stdout (the layer goes to --out)."""
    from logwarden.app.export.navigator import navigator_layer
    from logwarden.app.store import RecordFilter

    if as_json and out == "-":
        raise click.UsageError("--json prints a summary: give the layer a file with --out")
    target = open_for_writing(out) if out != "-" else None  # a bad --out fails before any work
    start, end = time_range(since, until)
    store = open_store_from(db_url, readonly=True, create=False)
    filters = RecordFilter(min_risk=min_risk, categories=tuple(category), statuses=tuple(status),
                           since=start, until=end)
    records, offset = [], 0
    while page := store.query_records(filters, limit=PAGE, offset=offset):
        records += page
        offset += len(page)
    layer = navigator_layer(records, name=name)
    text = json_text(layer)
    if target is None:
        click.echo(text)
    else:
        write_lines(target, [text])
    summary = {"out": out, "records": len(records), "techniques": len(layer["techniques"]),
               "top": [{"techniqueID": t["techniqueID"], "score": t["score"]} for t in layer["techniques"][:10]]}
    if as_json:
        print_json(summary)
    else:
        err_console.print(f"{len(layer['techniques']):,} technique(s) from {len(records):,} record(s)"
                          + (f" written to {target.name}" if target is not None else ""), highlight=False,
                          markup=False)
