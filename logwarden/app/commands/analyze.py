"""`logwarden analyze PATH...`: batch analysis of files and folders."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from logwarden.app.cli_common import (
    db_option,
    engine_options,
    err_console,
    handle_errors,
    json_option,
    make_engine_options,
    open_store_from,
    print_json,
    sigma_option,
)
from logwarden.app.config import get_settings
from logwarden.app.pipeline import LLM_POLICIES, Pipeline, RunMetrics, RunOptions, throughput_options
from logwarden.schemas import RISK_LEVELS


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--rules-only", is_flag=True, help="Deterministic detectors only; no model is loaded.")
@click.option("--llm-policy", type=click.Choice(LLM_POLICIES), default="suspicious", show_default=True,
              help="Which windows the model sees: signals = only windows a rule fired on; suspicious = those plus "
                   "quiet windows with alarming words and a 1-in-20 sample; all = every window.")
@click.option("--include", multiple=True, help="Glob of files to include (repeatable).")
@click.option("--exclude", multiple=True, help="Glob of files to exclude (repeatable).")
@click.option("--max-batch", type=int, default=None, help="Most windows per model call (default 8).")
@click.option("--throughput", is_flag=True,
              help="CUDA: feed the model the largest batches that fit in free GPU memory (no effect on CPU).")
@click.option("--resume", is_flag=True, help="Continue each file from the offset stored by an earlier run.")
@click.option("--export", "export_format", default=None,
              type=click.Choice(["jsonl", "ecs", "ocsf", "splunk-hec", "cef"]), help="Also export this run's records.")
@click.option("--out", "export_out", default="-", show_default=True, help="Export destination file ('-' = stdout).")
@sigma_option
@engine_options
@db_option
@json_option
@handle_errors
def analyze(paths, rules_only, llm_policy, include, exclude, throughput, resume, export_format, export_out, db_url, as_json,
            sigma_paths, **engine_kw):
    """Analyse log files and folders (recursive; .gz/.bz2/.xz and Windows .evtx too) into stored risk records."""
    settings = get_settings()
    engine_opts = make_engine_options(engine_kw)
    options = RunOptions(rules_only=rules_only, llm_policy=llm_policy, max_batch=engine_opts.max_batch,
                         include=include, exclude=exclude, resume=resume, sigma=sigma_paths,
                         window_max_lines=settings.window_max_lines, window_max_gap_s=settings.window_max_gap_s,
                         prompt_token_budget=settings.prompt_token_budget, max_new_tokens=settings.max_new_tokens)
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
    if export_format:
        _export(run_records, export_format, export_out)
    if as_json:
        print_json({"run_id": pipeline.run_id, "metrics": metrics.as_dict(),
                    "records": [r.model_dump(mode="json") for r in run_records]})
    sys.exit(1 if metrics.errors or metrics.llm_failures else 0)


def _run_records(store, run_id: str):
    from logwarden.app.store import RecordFilter

    filters = RecordFilter(run_id=run_id)
    return store.query_records(filters, order_by="risk_score", descending=True, limit=100_000)


def _export(records, fmt: str, out: str) -> None:
    from logwarden.app.export import export_records

    lines = export_records(records, fmt)
    if out == "-":
        for line in lines:
            click.echo(line)
        return
    with open(out, "w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line + "\n")
    err_console.print(f"exported {len(records)} records as {fmt} to {out}", highlight=False)


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
        if name != "lines" or self.counts["lines"] % 2000 == 0:
            self.progress.update(self.task, description=self._text())

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
            ("windows", m.windows), ("windows sent to model", m.windows_llm),
            ("windows skipped by policy", m.windows_skipped_by_policy), ("model calls", m.llm_calls),
            ("model failures", m.llm_failures), ("compression ratio", f"{m.compression_ratio:.1f}x"),
            ("records", m.records), ("errors", m.errors)]
    if m.windows_llm:  # what the model was shown, and what it made up
        rows += [("rare lines seen by the model", f"{m.rare_lines_shown:,}/{m.rare_lines_llm:,}"
                  + (f" ({m.rare_line_coverage:.0%})" if m.rare_line_coverage is not None else "")),
                 ("ungrounded entities removed", f"{m.entities_ungrounded:,}/{m.entities_named:,}"
                  + (f" ({m.ungrounded_rate:.1%})" if m.ungrounded_rate is not None else ""))]
    rows += [(f"records {level}", m.records_by_level[level]) for level in reversed(RISK_LEVELS)
             if level in m.records_by_level]
    rows += [(f"  {cat}", n) for cat, n in sorted(m.records_by_category.items(), key=lambda kv: -kv[1])]
    if m.breaker_open:
        rows.append(("circuit breaker", "OPEN: rest of run was rules-only"))
    for name, value in rows:
        table.add_row(name, f"{value:,}" if isinstance(value, int) else str(value))
    err_console.print(table)
