"""`logwarden watch DIR...`: follow folders and analyse appended lines in batches."""

from __future__ import annotations

import threading

import click

from logwarden.app.config import get_settings
from logwarden.app.policy import DEFAULT_LLM_POLICY, LLM_POLICIES
from logwarden.cli.common import (
    baseline_option,
    db_option,
    engine_options,
    err_console,
    handle_errors,
    llm_budget_option,
    make_engine_options,
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
@llm_budget_option
@click.option("--node", default=None, help="Name sources NODE:/path, for a store shared by several hosts "
              "(default: LOGWARDEN_NODE, else the path alone).")
@click.option("--quiet", is_flag=True, help="Print only the new high/critical records (no status line).")
@sigma_option
@baseline_option
@engine_options
@db_option
@handle_errors
def watch(folders, rules_only, max_delay_ms, batch_lines, from_start, max_seconds, llm_policy, llm_budget, node,
          quiet, sigma_paths, baseline_mode, db_url, **engine_kw):
    """Tail growing logs in FOLDERS; new lines are analysed and stored (SIGINT/SIGTERM stop cleanly).
    Each new high or critical record is printed on stdout as one line as it is stored."""
    from logwarden.app.pipeline import Pipeline, RunOptions
    from logwarden.app.signals import stop_signals
    from logwarden.app.watch import Watcher

    settings = get_settings()
    engine_opts = make_engine_options(engine_kw)
    engine = None
    if not rules_only:
        from logwarden.app.backends import open_engine

        engine = open_engine(engine_opts)
    options = RunOptions.from_settings(settings, rules_only=rules_only, max_batch=engine_opts.max_batch,
                                       node=node, sigma=sigma_paths, baseline=baseline_mode, llm_policy=llm_policy,
                                       llm_budget=llm_budget)
    options.commit_every_windows = None  # a batch's records and its offset land in one transaction
    options.incremental = True  # incidents follow each batch; the review runs beside the watcher
    # A stop (Ctrl-C, a service manager's SIGTERM) counts from the moment the run is made: one during
    # set-up ends the run `stopped` with exit 0, as it would a minute later, rather than `aborted`.
    stop = threading.Event()
    with stop_signals(lambda _signum: stop.set()):
        pipeline = Pipeline(open_store_from(db_url), engine, options, command="watch " + " ".join(folders),
                            on_stored=_print_alerts)
        watcher = Watcher(folders, pipeline, max_batch=batch_lines or settings.watch_max_batch,
                          max_delay_ms=max_delay_ms or settings.watch_max_delay_ms,
                          partial_timeout_s=settings.watch_partial_line_timeout_s, from_start=from_start,
                          status=None if quiet else _status_printer(), node=options.node, stop=stop)
        if not quiet:
            err_console.print(f"watching {shown(', '.join(folders))} (Ctrl-C to stop)", highlight=False, markup=False)
        stats = watcher.run(max_seconds=max_seconds)
    if not quiet:
        err_console.print(f"\nstopped: {shown(stats.line(0))}", highlight=False, markup=False)


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
