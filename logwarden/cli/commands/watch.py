"""`logwarden watch DIR...`: follow folders and analyse appended lines in batches."""

from __future__ import annotations

import functools

import click

from logwarden.app.config import get_settings
from logwarden.app.policy import DEFAULT_LLM_POLICY, LLM_POLICIES
from logwarden.cli.common import (
    baseline_option,
    db_option,
    err_console,
    exit_at_once,
    handle_errors,
    load_engine,
    make_engine_options,
    model_options,
    open_store_from,
    sigma_option,
)
from logwarden.cli.terminal import shown


@click.command()
@click.argument("folders", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--rules-only", is_flag=True, help="Deterministic detectors only; no model.")
@click.option("--max-delay-ms", type=int, default=None, help="Analyse a file's new lines at the latest after this delay.")
@click.option("--max-batch", "batch_lines", type=int, default=None,
              help="Analyse as soon as a file has this many new lines (default 500).")
@click.option("--from-start", is_flag=True, help="Read files that exist at start from their beginning (default: tail).")
@click.option("--max-seconds", type=float, default=None, help="Stop after this many seconds (default: until Ctrl-C).")
@click.option("--llm-policy", type=click.Choice(LLM_POLICIES), default=DEFAULT_LLM_POLICY, show_default=True,
              help="What the model reviews (as in analyze); it reviews beside the watcher, never in its way.")
@click.option("--node", default=None, help="Name sources NODE:/path, for a store shared by several hosts "
              "(default: LOGWARDEN_NODE, else the path alone).")
@click.option("--follow-links", is_flag=True, help="Read links in the folders that point out of them (default: "
              "skipped; LOGWARDEN_FOLLOW_LINKS).")
@click.option("--quiet", is_flag=True, help="Print only the new high/critical records (no status line).")
@sigma_option
@baseline_option
@model_options(budget=True)
@db_option
@handle_errors
def watch(folders, rules_only, max_delay_ms, batch_lines, from_start, max_seconds, llm_policy, llm_budget, node,
          follow_links, quiet, sigma_paths, baseline_mode, db_url, **engine_kw):
    """Tail growing logs in FOLDERS; new lines are analysed and stored (SIGINT/SIGTERM stop cleanly,
    within seconds, also during the model's work: the run is marked stopped and the exit code is 0).
    Each new high or critical record is printed on stdout as one line as it is stored."""
    from logwarden.app.follow import WatchOptions, follow

    engine_opts = make_engine_options(engine_kw)
    engine = None
    if not rules_only:
        engine = load_engine(engine_opts)
    options = WatchOptions.from_settings(get_settings(), batch_lines=batch_lines, max_delay_ms=max_delay_ms,
                                         from_start=from_start, rules_only=rules_only,
                                         max_batch=engine_opts.max_batch, node=node, sigma=sigma_paths,
                                         baseline=baseline_mode, llm_policy=llm_policy, llm_budget=llm_budget,
                                         follow_links=follow_links or None)
    stats = follow(folders, lambda: open_store_from(db_url), engine, options, max_seconds=max_seconds,
                   on_stored=_print_alerts, status=None if quiet else _status_printer(),
                   on_started=None if quiet else functools.partial(_print_watching, folders))
    if not quiet:
        err_console.print(f"\nstopped: {shown(stats.line(0))}", highlight=False, markup=False)
    if engine is not None and stats.stopped:  # the run is finished: no waiting at exit for a prefill a stop cancelled
        exit_at_once(0)


def _print_watching(folders) -> None:
    err_console.print(f"watching {shown(', '.join(folders))} (Ctrl-C to stop)", highlight=False, markup=False)


ALERT_LEVELS = ("high", "critical")


def alert_line(r) -> str:
    """One stored record as one line: level, time, host, category, the anomaly, where and its id."""
    when = f"{r.last_ts:%Y-%m-%d %H:%M:%S}" if r.last_ts else "-"
    anomaly = " ".join(r.anomaly.split())[:160]
    return (f"[{r.risk_level.upper()}] {when} {r.host or '-'} {r.category}: {anomaly} "
            f"({r.source}:{r.line_start}-{r.line_end}, id {r.id[:12]})")


def _print_alerts(records) -> None:
    for r in records:
        if r.risk_level in ALERT_LEVELS:
            _clear_status()
            click.echo(shown(alert_line(r)))


def _clear_status() -> None:
    """An alert line goes on its own line, not over the status line being redrawn on stderr."""
    if err_console.is_terminal:
        err_console.file.write("\r" + " " * (err_console.width - 1) + "\r")
        err_console.file.flush()


def _status_printer():
    """A single status line on a terminal, refreshed in place; silent when stderr is not a tty."""
    if not err_console.is_terminal:
        return None

    def show(line: str) -> None:
        err_console.file.write("\r" + shown(line)[: err_console.width - 1].ljust(err_console.width - 1))
        err_console.file.flush()

    return show
