"""`logwarden review --pending`: the model reviews what earlier runs' budgets left waiting."""

from __future__ import annotations

import sys

import click

from logwarden.app.config import get_settings
from logwarden.cli.common import (
    db_option,
    engine_options,
    err_console,
    handle_errors,
    json_option,
    llm_budget_option,
    make_engine_options,
    open_store_from,
    print_json,
)


@click.command()
@click.option("--pending", is_flag=True, required=True,
              help="Review the prompts waiting in the store, most suspicious first (required: nothing else is reviewed).")
@llm_budget_option
@engine_options
@db_option
@json_option
@handle_errors
def review(pending, llm_budget, db_url, as_json, **engine_kw):
    """Let the model review what is awaiting review (a run's budget ran out), within a budget."""
    from logwarden.app.backends import open_engine
    from logwarden.app.pipeline import Pipeline, RunOptions

    store = open_store_from(db_url, readonly=False)
    waiting = store.count_reviews()
    if not waiting:
        _report({"reviewed": 0, "awaiting_review": 0}, as_json, "nothing awaits review")
        return
    engine_opts = make_engine_options(engine_kw)
    options = RunOptions.from_settings(get_settings(), max_batch=engine_opts.max_batch, llm_budget=llm_budget)
    err_console.print(f"loading model … ({waiting:,} prompt(s) await review)", highlight=False)
    pipeline = Pipeline(store, open_engine(engine_opts), options, command="review --pending")
    from logwarden.app.review import ReviewItem

    pipeline.review([ReviewItem.from_json(item) for item in store.pending_reviews()])
    pipeline.group()  # the incidents around the reviewed records, and their stories
    metrics = pipeline.finish()
    left = store.count_reviews()
    _report({"reviewed": waiting - left, "awaiting_review": left, "model_calls": metrics.llm_calls,
             "model_failures": metrics.llm_failures, "judged_normal": metrics.deviations_dismissed,
             "budget": metrics.budget, "prompt_tokens": metrics.prompt_tokens}, as_json,
            f"reviewed {waiting - left:,} of {waiting:,} waiting prompt(s); {left:,} still await review")
    sys.exit(1 if metrics.llm_failures else 0)


def _report(report: dict, as_json: bool, line: str) -> None:
    if as_json:
        print_json(report)
    else:
        err_console.print(line, highlight=False)
