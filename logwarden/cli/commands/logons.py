"""`logwarden logons PATH…`: a logon summary per account and source address (Hayabusa's
`logon-summary`) over sshd, Windows (4624/4625/4648/4771/4776) and cloud sign-ins (CloudTrail
ConsoleLogin, Entra ID sign-in logs, Microsoft 365 UserLoggedIn/UserLoginFailed).
Reads the files; never opens or creates a store."""

from __future__ import annotations

import sys

import click
from rich.table import Table
from rich.text import Text

from logwarden.cli.common import err_console, handle_errors, json_option, out_console, print_json
from logwarden.cli.terminal import add_row, cell, shown

TIME = "%Y-%m-%d %H:%M"  # UTC; --json has the seconds


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--failed-only", is_flag=True, help="Only accounts and sources with at least one failure.")
@click.option("--include-service", is_flag=True,
              help="Also the system's own logons: service and system logon types (0, 5), machine accounts (NAME$).")
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True,
              help="Rows in the table (0 = all); --json has every row.")
@json_option
@handle_errors
def logons(paths, failed_only, include_service, limit, as_json):
    """Summarise sign-ins per account and source address: successes, failures, first and last of each.

    Reads sshd (Accepted/Failed), Windows 4624/4625 (4648 explicit credentials, 4771 Kerberos
    pre-authentication, 4776 NTLM), CloudTrail ConsoleLogin, Entra ID sign-ins and Microsoft 365
    UserLoggedIn/UserLoginFailed, in files or folders (.evtx, JSON, syslog; compressed too). Rows with failures come first. Times are UTC. Exit 1 when a file
    could not be read."""
    from logwarden.app.logons import summarise

    summary = summarise(paths, include_service=include_service)
    rows = [r for r in summary.rows if r.failures or not failed_only]
    if as_json:
        print_json({"files": summary.files, "events": summary.events, "logons": summary.logons,
                    "rows": [r.as_dict() for r in rows], "errors": summary.errors})
    else:
        _print_table(rows, limit)
        err_console.print(f"{summary.logons:,} sign-ins in {summary.events:,} events of {summary.files:,} file(s); "
                          f"{len(rows):,} account/source pairs", highlight=False, markup=False)
    for error in summary.errors:
        err_console.print(f"error: {shown(error)}", highlight=False, markup=False)
    sys.exit(1 if summary.errors else 0)


def _print_table(rows, limit: int) -> None:
    if not rows:
        err_console.print("no sign-ins found (sshd Accepted/Failed, Windows 4624/4625/4648/4771/4776, "
                          "CloudTrail ConsoleLogin, Entra ID, Microsoft 365)", highlight=False, markup=False)
        return
    # two lines a row (first over last, account over how it signed in): it fits 80 columns
    table = Table(show_header=True, header_style="bold")
    table.add_column("account / via", overflow="fold")
    table.add_column("source", overflow="fold")
    table.add_column("ok", justify="right", no_wrap=True)
    table.add_column("failed", justify="right", no_wrap=True)
    table.add_column("first, last ok", no_wrap=True)
    table.add_column("first, last fail", no_wrap=True)
    shown_rows = rows if not limit else rows[:limit]
    for row in shown_rows:
        add_row(table, _lines(row.account, cell(_via(row.via), "dim")), row.source, f"{row.successes:,}",
                cell(f"{row.failures:,}", "bold red" if row.failures and row.successes else ""),
                _span(row.first_success, row.last_success), _span(row.first_failure, row.last_failure))
    out_console.print(table)
    if len(shown_rows) < len(rows):
        err_console.print(f"{len(rows) - len(shown_rows):,} more rows: --limit 0 or --json shows them",
                          highlight=False, markup=False)


def _span(first, last) -> str:
    if first is None:
        return "-"
    return _lines(f"{first:{TIME}}", f"{last:{TIME}}")


def _lines(*values) -> Text:
    """Values one under the other in a cell, each shown as `cell` shows it (a newline in a log value stays visible)."""
    return Text("\n").join(cell(value) for value in values)


def _via(via: set[str]) -> str:
    """"sshd", "win 4625, win 4776": short enough for the account's column (--json has the names)."""
    return ", ".join(v.replace("windows-", "win ") for v in sorted(via))
