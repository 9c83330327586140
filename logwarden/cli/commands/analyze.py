"""`logwarden analyze PATH...`: batch analysis of files and folders."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from logwarden.app.config import get_settings
from logwarden.app.pipeline import LLM_POLICIES, Pipeline, RunMetrics, RunOptions, throughput_options
from logwarden.cli.common import (
    baseline_option,
    db_option,
    engine_options,
    err_console,
    handle_errors,
    json_option,
    llm_budget_option,
    make_engine_options,
    open_for_writing,
    open_store_from,
    print_json,
    sigma_option,
    write_lines,
)
from logwarden.schemas import RISK_LEVELS


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--rules-only", is_flag=True, help="Deterministic detectors only; no model is loaded.")
@click.option("--llm-policy", type=click.Choice(LLM_POLICIES), default="deviations", show_default=True,
              help="What the model reviews: deviations = windows holding a baseline deviation, shown as the "
                   "deviations' own lines (rules' lines are summary rows); signals = those and windows a rule fired "
                   "on; suspicious = those and quiet windows with alarming words and a 1-in-20 sample; all = every "
                   "window (the last three show rare lines too).")
@llm_budget_option
@click.option("--include", multiple=True, help="Glob of files to include (repeatable).")
@click.option("--exclude", multiple=True, help="Glob of files to exclude (repeatable).")
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
@sigma_option
@baseline_option
@engine_options
@db_option
@json_option
@handle_errors
def analyze(paths, rules_only, llm_policy, llm_budget, include, exclude, throughput, resume, node, final,
            export_format, export_out, sigma_paths, baseline_mode, db_url, as_json, **engine_kw):
    """Analyse log files and folders (recursive; .gz/.bz2/.xz and Windows .evtx too) into stored risk records."""
    export_file = _export_target(export_format, export_out, as_json)
    engine_opts = make_engine_options(engine_kw)
    options = RunOptions.from_settings(get_settings(), rules_only=rules_only, llm_policy=llm_policy,
                                       max_batch=engine_opts.max_batch, include=include, exclude=exclude,
                                       resume=resume, final=final, node=node, sigma=sigma_paths,
                                       baseline=baseline_mode, llm_budget=llm_budget)
    store = open_store_from(db_url)
    engine = None
    if not rules_only:
        from logwarden.app.backends import open_engine

        err_console.print("loading model …", highlight=False)
        engine = open_engine(engine_opts)
        if throughput:
            options = throughput_options(options, engine)
    with _progress(paths) as progress_cb:
        pipeline = Pipeline(store, engine, options, progress=progress_cb, command="analyze " + " ".join(map(str, paths)))
        metrics = pipeline.analyze(paths)
    run_records = _run_records(store, pipeline.run_id)
    _print_summary(metrics)
    _print_notes(metrics)
    if export_format:
        _export(run_records, export_format, export_file)
    if as_json:
        print_json({"run_id": pipeline.run_id, "metrics": metrics.as_dict(),
                    "records": [r.model_dump(mode="json") for r in run_records]})
    sys.exit(1 if metrics.errors or metrics.llm_failures else 0)


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


class _progress:
    """A rich progress display on stderr fed by the pipeline's (counter, increment) callback."""

    COUNTERS = ("lines", "windows", "llm_calls", "records", "errors")

    def __init__(self, paths):
        self.total = sum(_size(Path(p)) for p in paths)
        self.counts = dict.fromkeys(self.COUNTERS, 0)
        self.progress = Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                                 TimeElapsedColumn(), TimeRemainingColumn(), console=err_console, transient=True,
                                 disable=not err_console.is_terminal)

    def __enter__(self):
        self.progress.start()
        self.task = self.progress.add_task(self._text(), total=self.total or None)
        return self.update

    def update(self, name: str, n: int) -> None:
        if name == "bytes":
            self.progress.advance(self.task, n)
            return
        self.counts[name] = self.counts.get(name, 0) + n
        self.progress.update(self.task, description=self._text())  # lines come a window at a time

    def _text(self) -> str:
        return " ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in self.counts.items())

    def __exit__(self, *exc):
        self.progress.stop()


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    return 0


def _print_summary(m: RunMetrics) -> None:
    table = Table(title="logwarden analyze", show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [("files", m.files), ("lines read", m.lines), ("lines/s", f"{m.as_dict()['lines_per_s']:,.0f}"),
            ("windows", m.windows), ("baseline deviations", m.deviations),
            ("windows for the model", m.windows_llm), ("prompts queued", m.prompts_queued),
            ("model calls", m.llm_calls), ("model failures", m.llm_failures),
            ("awaiting review", m.reviews_pending), ("deviations judged normal", m.deviations_dismissed),
            ("compression ratio", _ratio(m.compression_ratio)), ("records", m.records), ("errors", m.errors)]
    if m.budget:
        rows.append(("model budget", m.budget))
    if m.windows_llm:  # what the model was shown, and what it made up
        rows += [("rare lines seen by the model", f"{m.rare_lines_shown:,}/{m.rare_lines_llm:,}"
                  + (f" ({m.rare_line_coverage:.0%})" if m.rare_line_coverage is not None else "")),
                 ("ungrounded entities removed", f"{m.entities_ungrounded:,}/{m.entities_named:,}"
                  + (f" ({m.ungrounded_rate:.1%})" if m.ungrounded_rate is not None else ""))]
    rows += [(name, value) for name, value in (("last lines held back", m.held_back_lines),
                                                ("lines cut at the length limit", m.truncated_lines),
                                                ("NUL bytes skipped", m.nul_bytes)) if value]
    rows += [(f"records {level}", m.records_by_level[level]) for level in reversed(RISK_LEVELS)
             if level in m.records_by_level]
    rows += [(f"  {cat}", n) for cat, n in sorted(m.records_by_category.items(), key=lambda kv: -kv[1])]
    if m.breaker_open:
        rows.append(("circuit breaker", "OPEN: rest of run was rules-only"))
    for name, value in rows:
        table.add_row(name, f"{value:,}" if isinstance(value, int) else str(value))
    err_console.print(table)


def _ratio(ratio: float | None) -> str:
    """A rules-only run builds no digest, so it has no compression ratio."""
    return "n/a" if ratio is None else f"{ratio:.1f}x"


def _print_notes(m: RunMetrics) -> None:
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
