"""`logwarden analyze PATH...`: batch analysis of files and folders.

SIGINT/SIGTERM stop a run cleanly in every stage (reading, the model's review, the incidents'
regrouping and stories; during the model's load, before the run exists, the command ends at once):
the model's generations in flight are cancelled, what was finished is committed, the run is marked
`stopped`, and the process exits within seconds with 128 + the signal's number and no traceback
(`--resume` goes on from there). A second signal exits at once.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from logwarden.app.backends import facts_line, model_facts
from logwarden.app.config import get_settings
from logwarden.app.metrics import RunMetrics
from logwarden.app.parse.timestamps import EARLIEST_YEAR, LATEST_YEAR
from logwarden.app.pipeline import Pipeline, throughput_options
from logwarden.app.policy import DEFAULT_LLM_POLICY, LLM_POLICIES
from logwarden.app.run_options import RunOptions
from logwarden.cli.common import (
    StopRequest,
    baseline_option,
    db_option,
    err_console,
    exit_at_once,
    handle_errors,
    json_option,
    load_engine,
    make_engine_options,
    model_options,
    open_for_writing,
    open_store_from,
    print_json,
    sigma_option,
    signal_name,
    write_lines,
)
from logwarden.cli.progress import RunProgress
from logwarden.cli.summary import print_run_summary
from logwarden.cli.terminal import shown
from logwarden.errors import RunStopped


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--rules-only", is_flag=True, help="Deterministic detectors only; no model is loaded.")
@click.option("--llm-policy", type=click.Choice(LLM_POLICIES), default=DEFAULT_LLM_POLICY, show_default=True,
              help="What the model reviews: deviations = windows holding a baseline deviation, shown as the "
                   "deviations' own lines (rules' lines are summary rows); signals = those and windows a rule fired "
                   "on; suspicious = those and quiet windows with alarming words and a 1-in-20 sample; all = every "
                   "window (the last three show rare lines too).")
@click.option("--include", multiple=True, help="Glob of files to include (repeatable).")
@click.option("--exclude", multiple=True, help="Glob of files to exclude (repeatable).")
@click.option("--follow-links", is_flag=True, help="Read links in the folders that point out of them (default: "
              "skipped and listed; LOGWARDEN_FOLLOW_LINKS).")
@click.option("--max-batch", type=int, default=None, help="Most prompts per model call (default: LOGWARDEN_MAX_BATCH, 8).")
@click.option("--throughput", is_flag=True,
              help="CUDA: feed the model the largest batches that fit in free GPU memory (no effect on CPU).")
@click.option("--resume", is_flag=True,
              help="Continue each file where an earlier run stopped (a rotated or compressed file by its content).")
@click.option("--node", default=None, help="Name sources NODE:/path, for a store shared by several hosts "
              "(default: LOGWARDEN_NODE, else the path alone).")
@click.option("--final", is_flag=True,
              help="The files are complete: read an unterminated last line too (by default it is held back "
                   "for --resume while the file may still be written: unless it is compressed or rotated, or "
                   "untouched for LOGWARDEN_WATCH_PARTIAL_LINE_TIMEOUT_S, 5 s).")
@click.option("--export", "export_format", default=None,
              type=click.Choice(["jsonl", "ecs", "ocsf", "splunk-hec", "cef"]), help="Also export this run's records.")
@click.option("--out", "export_out", default=None, help="Export destination file (default: stdout; required with --json).")
@click.option("--year", type=click.IntRange(EARLIEST_YEAR, LATEST_YEAR), default=None,
              help="The year of year-less dates (RFC 3164 syslog). Default: per file, from its own lines that "
                   "state a year, else its rotation's newer file, else its modification time, never after "
                   "tomorrow; the summary says which.")
@sigma_option
@baseline_option
@model_options(budget=True)
@db_option
@json_option
@handle_errors
def analyze(paths, rules_only, llm_policy, llm_budget, include, exclude, follow_links, throughput, resume, node, final, export_format,
            export_out, year, sigma_paths, baseline_mode, db_url, as_json, **engine_kw):
    """Analyse log files and folders (recursive; .gz/.bz2/.xz and Windows .evtx too) into stored risk records."""
    export_file = _export_target(export_format, export_out, as_json)
    engine_opts = make_engine_options(engine_kw)
    options = RunOptions.from_settings(get_settings(), rules_only=rules_only, llm_policy=llm_policy,
                                       max_batch=engine_opts.max_batch, include=include, exclude=exclude,
                                       follow_links=follow_links or None,
                                       resume=resume, final=final, node=node, sigma=sigma_paths, year=year,
                                       baseline=baseline_mode, llm_budget=llm_budget)
    db_url = db_url or get_settings().db_url
    store = open_store_from(db_url)
    engine = None
    if not rules_only:
        err_console.print("loading model …", highlight=False)
        engine = load_engine(engine_opts)
        err_console.print(shown(facts_line(model_facts(engine))), highlight=False, markup=False)
        if throughput:
            options = throughput_options(options, engine)
    from logwarden.app.review import default_budget

    budget = default_budget(options.llm_budget, engine) if engine is not None else None
    progress = RunProgress(paths, err_console, model=engine is not None, budget=budget)
    pipeline: Pipeline | None = None
    stop = StopRequest(lambda: pipeline.cancel() if pipeline is not None else None)
    try:
        with stop.installed():  # before the run exists: a stop as it is made stops it too
            pipeline = Pipeline(store, engine, options, progress=progress.update,
                                command="analyze " + " ".join(map(str, paths)))
            if stop.signum is not None:
                pipeline.cancel()
            with progress:
                metrics = pipeline.analyze(paths)
    except RunStopped:
        _stopped(pipeline, store, db_url, stop.signum, model=engine is not None)
    run_records = _run_records(store, pipeline.run_id)
    print_run_summary(err_console, metrics, run_records, db_url=db_url, model=engine is not None)
    err_console.print(shown(facts_line(model_facts(engine))), highlight=False, markup=False)
    _print_notes(metrics)
    if export_format:
        _export(run_records, export_format, export_file)
    if as_json:
        print_json({"run_id": pipeline.run_id, "model": model_facts(engine), "metrics": metrics.as_dict(),
                    "records": [r.model_dump(mode="json") for r in run_records]})
    sys.exit(1 if metrics.errors or metrics.llm_failures else 0)


def _stopped(pipeline: Pipeline, store, db_url: str, signum: int | None, *, model: bool) -> None:
    """Say what was kept and exit 128 + the signal (with a model loaded, at once: `exit_at_once`)."""
    from logwarden.app.store import RecordFilter

    kept = store.count_records(RecordFilter(run_id=pipeline.run_id))  # counted: reading 100k rows takes seconds
    err_console.print(f"stopped by {signal_name(signum)}: {kept} record(s) of this run kept, the run is marked stopped; "
                      f"`logwarden analyze --resume …` goes on from there. Database: {db_url}",
                      highlight=False, markup=False)
    code = 128 + (signum or signal.SIGINT)
    if model:
        exit_at_once(code)
    sys.exit(code)


def _run_records(store, run_id: str):
    from logwarden.app.store import RecordFilter

    filters = RecordFilter(run_id=run_id)
    return store.query_records(filters, order_by="risk_score", descending=True, limit=100_000)


def _export_target(fmt: str | None, out: str | None, as_json: bool):
    """Where --export writes, checked before any work: stdout, or a file that can be written."""
    if fmt is None:
        if out is not None:
            raise click.UsageError("--out is where --export writes: give --export FORMAT too")
        return None
    if out in (None, "-"):
        if as_json:
            raise click.UsageError("--json prints the run on stdout: send --export elsewhere with --out FILE")
        return None
    return open_for_writing(out)


def _export(records, fmt: str, out) -> None:
    from logwarden.app.export import export_records

    lines = export_records(records, fmt)
    if out is None:
        for line in lines:
            click.echo(line)
        return
    write_lines(out, lines)
    err_console.print(f"exported {len(records)} records as {fmt} to {out.name}", highlight=False)


def _print_notes(m: RunMetrics) -> None:
    if m.skipped:
        err_console.print("skipped: " + "; ".join(f"{shown(Path(name).name)} ({shown(why.removeprefix('not a log: '))})"
                                                 for name, why in m.skipped.items()),
                          highlight=False, markup=False)
    for reason in sorted(set(m.years.values())):
        names = ", ".join(Path(name).name for name, why in m.years.items() if why == reason)
        err_console.print(f"year-less dates in {names}: {reason}", highlight=False, markup=False)
    if m.reviews_pending:
        err_console.print(f"note: {m.reviews_pending} prompt(s) await the model's review (the budget ran out); "
                          "their records are stored as the rules and baselines made them: "
                          "`logwarden review --pending` continues", highlight=False)
    if m.held_back_lines:
        err_console.print(f"note: {m.held_back_lines} file(s) end in a line without a newline (still being "
                          "written?); it was left for `--resume` — pass --final to read it now", highlight=False)
    if m.truncated_lines:
        err_console.print(f"note: {m.truncated_lines} line(s) were longer than the line limit; their first "
                          "64 KiB were analysed and the text ends in '… [truncated N bytes]'", highlight=False)
    if m.windows_quarantined:
        err_console.print(f"note: the database refused the rows of {m.windows_quarantined} window(s) "
                          f"({m.lines_quarantined} lines): they were read, not stored; each is an error row "
                          "of the run (the UI's errors) and is not read again by --resume", highlight=False)
