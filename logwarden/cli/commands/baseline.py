"""`logwarden baseline learn|show|export|import|reset|accept|mute|unmute`: the learned baseline of normal."""

from __future__ import annotations

import json
import sys
import time

import click
from rich.table import Table

from logwarden.app.config import get_settings
from logwarden.app.safetext import json_safe
from logwarden.cli import terminal
from logwarden.cli.common import (
    db_option,
    err_console,
    handle_errors,
    json_option,
    open_for_writing,
    open_store_from,
    out_console,
    print_json,
    write_lines,
)
from logwarden.errors import InputError

KINDS = ("web-site", "web", "template-scope", "template", "host", "entity")


@click.group()
def baseline() -> None:
    """What normal looks like, learned from the logs: per-site web profiles, message kinds, first-seen activity."""


@baseline.command("learn")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--include", multiple=True, help="Glob of files to include (repeatable).")
@click.option("--exclude", multiple=True, help="Glob of files to exclude (repeatable).")
@click.option("--node", default=None, help="Name sources NODE:/path (default: LOGWARDEN_NODE).")
@db_option
@json_option
@handle_errors
def learn(paths, include, exclude, node, db_url, as_json):
    """Learn from history (e.g. last week's rotated logs) without making records: everything in
    these files is taken as normal."""
    from logwarden.app.baseline.learn import learn_paths

    settings = get_settings()
    began = time.perf_counter()
    learned = learn_paths(open_store_from(db_url), paths, include=include, exclude=exclude,
                          node=node or settings.node, window_max_lines=settings.window_max_lines,
                          window_max_gap_s=settings.window_max_gap_s)
    elapsed = time.perf_counter() - began
    report = {"files": learned.files, "lines": learned.lines, "windows": learned.windows, "errors": learned.errors,
              "rows_written": learned.rows, "seconds": round(elapsed, 2),
              "lines_per_s": round(learned.lines / elapsed) if elapsed else 0}
    if as_json:
        print_json(report)
    else:
        err_console.print(f"learned {report['lines']:,} lines from {report['files']} file(s) in {elapsed:.1f} s "
                          f"({report['lines_per_s']:,} lines/s); {report['rows_written']:,} profile rows written"
                          + (f"; {learned.errors} unreadable" if learned.errors else ""), highlight=False)
    sys.exit(1 if learned.errors else 0)


@baseline.command("show")
@click.option("--kind", type=click.Choice(KINDS), default=None, help="Only this kind of profile.")
@click.option("--scope", default=None, help="Only this scope (a site, a format/program, a host): list its keys.")
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True, help="Most keys listed; 0 = all.")
@db_option
@json_option
@handle_errors
def show(kind, scope, limit, db_url, as_json):
    """How big the baseline is, per kind; with --scope, what it knows there."""
    store = open_store_from(db_url, readonly=True)
    if scope is None:
        summary = store.baseline_summary()
        if kind:
            summary = [s for s in summary if s["kind"] == kind]
        if as_json:
            print_json({"kinds": summary, "muted": sorted(store.baseline_mutes())})
            return
        table = Table(show_header=True, header_style="bold", title="baseline")
        for column in ("kind", "scopes", "rows", "size"):
            table.add_column(column, justify="left" if column == "kind" else "right")
        for s in summary:
            terminal.add_row(table, s["kind"], f"{s['scopes']:,}", f"{s['rows']:,}", f"{s['bytes'] / 1024:,.0f} KiB")
        out_console.print(table)
        return
    rows = list(store.iter_baseline(kind=kind, scope=scope))
    rows.sort(key=lambda r: -r["clients"])
    shown = rows[:limit] if limit else rows
    if as_json:
        print_json(shown)
        return
    table = Table(show_header=True, header_style="bold", title=f"baseline of {scope}")
    for column in ("kind", "key", "clients"):
        table.add_column(column, overflow="fold")
    for row in shown:
        terminal.add_row(table, row["kind"], row["key"] or "(scope summary)", f"{row['clients']:,}")
    out_console.print(table)
    err_console.print(f"{len(shown)} of {len(rows)} rows", highlight=False)


@baseline.command("export")
@click.option("--kind", type=click.Choice(KINDS), default=None, help="Only this kind of profile.")
@click.option("--scope", default=None, help="Only this scope.")
@click.option("--out", "out_path", default=None, help="File to write (default: stdout).")
@db_option
@handle_errors
def export(kind, scope, out_path, db_url):
    """Write the baseline as JSON lines (one profile row each), to copy it to another store."""
    store = open_store_from(db_url, readonly=True)
    lines = (json_safe(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
             for row in store.iter_baseline(kind=kind, scope=scope))
    if out_path in (None, "-"):
        for line in lines:
            click.echo(line)
        return
    count = write_lines(open_for_writing(out_path), lines)
    err_console.print(f"exported {count:,} baseline rows to {out_path}", highlight=False)


@baseline.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@db_option
@json_option
@handle_errors
def import_(path, db_url, as_json):
    """Merge an exported baseline into this store (what both know adds up)."""
    from logwarden.app.baseline import Baseline

    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as exc:
                    raise InputError(f"{path}:{number}: not JSON ({exc.msg}). Fix: import a file written by "
                                     f"`logwarden baseline export`.") from None
    store = open_store_from(db_url)
    learned = Baseline(store, mode="learn")
    count = learned.add_rows(rows)
    with store.transaction() as tx:
        learned.flush(tx)
    if as_json:
        print_json({"rows": count})
    else:
        err_console.print(f"merged {count:,} baseline rows from {path}", highlight=False)


@baseline.command("reset")
@click.option("--kind", type=click.Choice(KINDS), default=None, help="Only this kind.")
@click.option("--scope", default=None, help="Only this scope (with --kind).")
@click.option("--yes", is_flag=True, help="Do it (without it nothing is deleted).")
@db_option
@json_option
@handle_errors
def reset(kind, scope, yes, db_url, as_json):
    """Forget what was learned (everything, one kind, or one scope); muted refs stay."""
    if scope is not None and kind is None:
        raise click.UsageError("--scope needs --kind")
    if not yes:
        raise click.UsageError("this forgets learned baselines: add --yes to do it")
    removed = open_store_from(db_url).reset_baseline(kind=kind, scope=scope)
    if as_json:
        print_json({"removed": removed})
    else:
        err_console.print(f"removed {removed:,} baseline rows", highlight=False)


@baseline.command("accept")
@click.argument("refs", nargs=-1, required=True)
@db_option
@json_option
@handle_errors
def accept(refs, db_url, as_json):
    """Make what deviation REFs (or every ref of a record ID) name part of the baseline."""
    from logwarden.app.baseline import Baseline

    store = open_store_from(db_url)
    learned = Baseline(store, mode="judge")
    accepted = [learned.accept(ref) for ref in _refs(store, refs)]
    with store.transaction() as tx:
        learned.flush(tx)
    _report(accepted, "accepted", as_json)


@baseline.command("mute")
@click.argument("refs", nargs=-1, required=True)
@click.option("--note", default=None, help="Why (kept with the mute).")
@db_option
@json_option
@handle_errors
def mute(refs, note, db_url, as_json):
    """Never report deviation REFs (or every ref of a record ID) again; a ref prefix mutes all below it."""
    store = open_store_from(db_url)
    muted = _refs(store, refs)
    for ref in muted:
        store.mute(ref, note=note)
    _report(muted, "muted", as_json)


@baseline.command("unmute")
@click.argument("refs", nargs=-1, required=True)
@db_option
@json_option
@handle_errors
def unmute(refs, db_url, as_json):
    """Report deviation REFs again."""
    store = open_store_from(db_url)
    gone = [ref for ref in refs if store.unmute(ref)]
    _report(gone, "unmuted", as_json)


def _refs(store, given) -> list[str]:
    """Refs as given; a record id (or a unique prefix of one) stands for every ref its text carries."""
    from logwarden.app.baseline.deviation import refs_in

    refs = []
    for item in given:
        if "|" in item:
            refs.append(item)
            continue
        record = store.get_record(item) or _by_prefix(store, item)
        found = refs_in(f"{record.anomaly} {record.trace}") if record is not None else []
        if not found:
            raise InputError(f"{item!r} is neither a deviation ref (web|site|GET /path|name|param) nor a record "
                             f"with baseline deviations. Fix: copy the ref from `logwarden records show ID`.")
        refs += found
    return list(dict.fromkeys(refs))


def _by_prefix(store, prefix: str):
    matches = [r for r in store.query_records(limit=100_000) if r.id.startswith(prefix)]
    return matches[0] if len(matches) == 1 else None


def _report(items, verb: str, as_json: bool) -> None:
    if as_json:
        print_json({verb: items})
        return
    for item in items:
        err_console.print(f"{verb}: {terminal.shown(item)}", highlight=False, markup=False)
