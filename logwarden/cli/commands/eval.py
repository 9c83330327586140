"""`logwarden eval --labels FILE [PATH...]`: score the pipeline against labelled units.

Runs the deterministic rules alone and, unless `--rules-only`, the rules + the model, each into
a throw-away store, then prints recall / false-positive rate / category accuracy per source file,
per source and overall, and per run the model's prompts, rare-line coverage, ungrounded-entity
rate and the model texts the text gate rejected, by reason (a rich table on stderr, or `--json` on stdout). `--split FILE --side heldout` scores one side
of a realdata split. Scoring lives in `app/evaluate.py`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import click
from rich.table import Table

from logwarden.app.config import get_settings
from logwarden.app.evaluate import (
    EvalRun,
    Scores,
    filter_units,
    history_scenario,
    labelled_files,
    load_labels,
    run_eval,
)
from logwarden.app.policy import DEFAULT_LLM_POLICY, LLM_POLICIES
from logwarden.app.run_options import RunOptions
from logwarden.cli.common import (
    baseline_option,
    err_console,
    handle_errors,
    json_option,
    load_engine,
    make_engine_options,
    model_options,
    print_json,
    sigma_option,
)
from logwarden.cli.summary import print_detections, rejected_text
from logwarden.cli.terminal import add_row


@click.command("eval")
@click.option("--labels", "labels_path", required=True, type=click.Path(path_type=Path),
              help="JSONL of {file, line_start, line_end, category, risk_min, risk_max} units.")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--rules-only", is_flag=True, help="Score the deterministic detectors alone; no model is loaded.")
@click.option("--llm-policy", type=click.Choice(LLM_POLICIES), default=DEFAULT_LLM_POLICY, show_default=True,
              help="Which windows the model sees (as in analyze).")
@click.option("--max-batch", type=int, default=None, help="Most prompts per model call (default: LOGWARDEN_MAX_BATCH, 8).")
@click.option("--split", "split_path", type=click.Path(path_type=Path), default=None,
              help="A split file (data/realdata_split.json): score only the labelled files of --side.")
@click.option("--side", type=click.Choice(["train", "heldout"]), default="heldout", show_default=True,
              help="Which side of --split to score.")
@click.option("--max-prompts-per-window", type=click.IntRange(min=0), default=None,
              help="Prompts a window's rare lines may take (0 = as many as they need; default: analyze's).")
@click.option("--history-share", type=click.FloatRange(0, 1, max_open=True), default=None,
              help="Score each source as a site with a past: this share of its benign units (file order) is "
                   "history the baseline learns first (never scored); the rest and every attack unit are "
                   "interleaved in a seeded order and scored.")
@click.option("--seed", type=int, default=7, show_default=True, help="The interleaving's seed (with --history-share).")
@sigma_option
@baseline_option
@model_options()
@json_option
@handle_errors
def eval_command(labels_path: Path, paths, rules_only: bool, llm_policy: str, split_path: Path | None, side: str,
                 max_prompts_per_window: int | None, history_share: float | None, seed: int, as_json: bool,
                 sigma_paths, baseline_mode, **engine_kw):
    """Score detection recall, false positives and category accuracy against labelled log lines."""
    units = load_labels(labels_path)
    labels_dir = labels_path.resolve().parent
    if split_path is not None:
        from logwarden.train.realdata import load_split, side_of

        units = filter_units(units, side_of(load_split(split_path)), side)
    if history_share is not None and paths:
        raise click.UsageError("--history-share builds its own test files from the labelled units: drop PATH")
    with tempfile.TemporaryDirectory(prefix="logwarden-history-") as tmp:
        history: list[Path] = []
        if history_share is not None:
            scenario = history_scenario(units, labels_dir, Path(tmp), share=history_share, seed=seed)
            units, labels_dir, paths, history = scenario.units, scenario.folder, scenario.test, scenario.history
        runs = _runs(units, labels_dir, list(paths) or labelled_files(units, labels_dir), history, rules_only,
                     llm_policy, max_prompts_per_window, sigma_paths, baseline_mode, engine_kw)
    if as_json:
        print_json({run.name: run.report.as_dict() | {"metrics": run.metrics} for run in runs})
    else:
        for run in runs:  # what was detected, Hayabusa's way, before how well
            print_detections(err_console, run.records, title=f"{run.name}: detections per level")
        err_console.print(results_table(runs))
        err_console.print(flagged_line(runs), highlight=False)
        if len(runs) > 1:
            err_console.print(model_table(runs[1:]))


def _runs(units, labels_dir: Path, targets: list[Path], history: list[Path], rules_only: bool, llm_policy: str,
          max_prompts_per_window: int | None, sigma_paths, baseline_mode, engine_kw) -> list[EvalRun]:
    engine_opts = make_engine_options(engine_kw)
    options = RunOptions.from_settings(get_settings(), llm_policy=llm_policy, max_batch=engine_opts.max_batch,
                                       sigma=tuple(sigma_paths), baseline=baseline_mode)
    if max_prompts_per_window is not None:  # 0 = as many prompts as the rare lines need
        options.max_prompts_per_window = max_prompts_per_window or None
    runs = [run_eval(units, labels_dir, targets, name="rules-only", options=options, history=history)]
    if not rules_only:
        err_console.print("loading model …", highlight=False)
        engine = load_engine(engine_opts)
        name = f"rules+{engine.model_name}" + (f"+{Path(engine.adapter_name).name}" if engine.adapter_name else "")
        runs.append(run_eval(units, labels_dir, targets, engine=engine, name=name, options=options,
                             history=history))
    return runs


def flagged_line(runs: list[EvalRun]) -> str:
    """How often benign units were touched by a record at all (low and up), whatever their risk_max."""
    return "benign units flagged: " + "; ".join(
        f"{run.name}: " + ", ".join(f"≥{level} {_pct(share)}" for level, share in run.report.benign_flagged().items())
        for run in runs)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _row(name: str, scope: str, s: Scores) -> list[str]:
    return [name, scope, f"{s.detected}/{s.attacks}", _pct(s.recall), f"{s.category_correct}/{s.attacks}",
            _pct(s.category_accuracy), _pct(s.category_top_accuracy), f"{s.false_positives}/{s.benign}", _pct(s.fp_rate)]


def results_table(runs: list[EvalRun]) -> Table:
    table = Table(title="logwarden eval", header_style="bold")
    for column in ("run", "file", "detected", "recall", "right category", "category acc.", "top-risk cat. acc.",
                   "FP units", "FP rate"):
        table.add_column(column, justify="left" if column in ("run", "file") else "right")
    for run in runs:
        for scope, scores in run.report.per_file.items():
            add_row(table, *_row(run.name, scope, scores))
        if len(run.report.per_source) > 1:
            for scope, scores in run.report.per_source.items():
                add_row(table, *_row(run.name, f"{scope}/*", scores), style="italic")
        add_row(table, *_row(run.name, "OVERALL", run.report.overall), style="bold", end_section=True)
    return table


def model_table(runs: list[EvalRun]) -> Table:
    """What the model was shown and how faithful it was, per model run."""
    table = Table(title="the model's side", header_style="bold")
    for column in ("run", "prompts", "windows split", "rare lines seen", "entities named", "ungrounded",
                   "texts rejected"):
        table.add_column(column, justify="left" if column == "run" else "right")
    for run in runs:
        m = run.metrics
        add_row(table, run.name, f"{m['llm_calls']:,}", f"{m['windows_split']:,}",
                f"{m['rare_lines_shown']:,}/{m['rare_lines_llm']:,} ({_pct(m['rare_line_coverage'])})",
                f"{m['entities_named']:,}", f"{m['entities_ungrounded']:,} ({_pct(m['ungrounded_rate'])})",
                rejected_text(m.get("texts_rejected", {})))
    return table
