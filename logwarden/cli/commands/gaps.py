"""`logwarden gaps PATH…`: where logs lost records or were made to (Chainsaw's `analyse gaps`,
extended to syslog, journald and auditd): EventRecordID holes per Windows channel and computer,
cleared logs (1102/104), audit serial holes, and quiet periods in text logs. Reads the files;
never opens or creates a store."""

from __future__ import annotations

import sys
from collections import defaultdict
from datetime import timedelta

import click
from rich.table import Table
from rich.text import Text

from logwarden.app.gaps import KINDS, MIN_QUIET, QUIET_FACTOR, GapOptions, find_gaps
from logwarden.cli.common import err_console, handle_errors, json_option, out_console, print_json
from logwarden.cli.terminal import add_row, cell, shown

TIME = "%Y-%m-%d %H:%M:%S"  # UTC
# the table shows what matters most first: clears, then the biggest holes and silences
_ORDER = {"cleared": 0, "audit_serials": 1, "record_ids": 2, "quiet": 3}



@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--kind", "kinds", type=click.Choice(KINDS), multiple=True,
              help="Only these kinds of finding (repeatable; default: all).")
@click.option("--min-quiet", type=click.FloatRange(min=0), default=None,
              help=f"Minutes: no silence shorter than this is a finding (default {MIN_QUIET.total_seconds() / 60:g}).")
@click.option("--factor", type=click.FloatRange(min=1), default=None,
              help="A silence is a finding when it is this many times the file's median time between lines "
                   f"(default {QUIET_FACTOR:g}) and at least --min-quiet.")
@click.option("--limit", type=click.IntRange(min=0), default=40, show_default=True,
              help="Rows in the table (0 = all); --json has every finding.")
@json_option
@handle_errors
def gaps(paths, kinds, min_quiet, factor, limit, as_json):
    """Find gaps and tampering: EventRecordID holes, cleared logs, audit serial holes, quiet periods.

    EVTX (and Windows JSON exports) by channel and computer; auditd by host; any timestamped text
    log (syslog, journald JSON, auditd) by file. A filtered or curated sample has holes by design:
    a finding is where to look, not proof of deletion. Times are UTC. Exit 1 when a file could not
    be read."""
    defaults = GapOptions()
    options = GapOptions(min_quiet=timedelta(minutes=min_quiet) if min_quiet is not None else defaults.min_quiet,
                         factor=factor if factor is not None else defaults.factor,
                         kinds=tuple(kinds) or defaults.kinds)
    report = find_gaps(paths, options)
    if as_json:
        print_json({"files": report.files, "events": report.events, "gaps": [g.as_dict() for g in report.gaps],
                    "errors": report.errors})
    else:
        _print_table(report.gaps, limit)
        _print_scopes(report.gaps)
        err_console.print(f"{len(report.gaps):,} finding(s) in {report.events:,} events of {report.files:,} file(s)",
                          highlight=False, markup=False)
    for error in report.errors:
        err_console.print(f"error: {shown(error)}", highlight=False, markup=False)
    sys.exit(1 if report.errors else 0)


def _print_table(found, limit: int) -> None:
    if not found:
        err_console.print("no gaps found", highlight=False, markup=False)
        return
    ranked = sorted(found, key=lambda g: (_ORDER[g.kind], -g.missing, -(g.seconds or 0)))
    rows = ranked if not limit else ranked[:limit]
    table = Table(show_header=True, header_style="bold")
    table.add_column("kind", overflow="fold")
    table.add_column("start / end", no_wrap=True)
    table.add_column("where", overflow="fold")
    table.add_column("what", overflow="fold")
    for gap in rows:
        style = "bold red" if gap.kind == "cleared" else ""
        add_row(table, cell(gap.kind, style), Text("\n").join((cell(_time(gap.start)), cell(_time(gap.end)))),
                _where(gap), gap.detail)
    out_console.print(table)
    if len(rows) < len(found):
        err_console.print(f"{len(found) - len(rows):,} more finding(s): --limit 0 or --json shows them",
                          highlight=False, markup=False)


def _print_scopes(found) -> None:
    """One line per channel or host with holes: how many and how much is missing."""
    holes: dict[tuple[str, str], list[int]] = defaultdict(list)
    for gap in found:
        if gap.kind in ("record_ids", "audit_serials") and gap.missing:
            holes[(gap.kind, gap.scope)].append(gap.missing)
    for (kind, scope), missing in sorted(holes.items()):
        name = "EventRecordIDs" if kind == "record_ids" else "audit serials"
        err_console.print(f"{shown(scope)}: {len(missing):,} hole(s), {sum(missing):,} {name} missing "
                          f"(largest {max(missing):,})", highlight=False, markup=False)


def _where(gap) -> str:
    """The channel@computer or audit host; a quiet period's file by its name (--json has the paths)."""
    return gap.source.rsplit("/", 1)[-1] if gap.scope == gap.source else gap.scope


def _time(ts) -> str:
    return "-" if ts is None else ts.strftime(TIME)
