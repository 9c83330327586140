"""`logwarden review --pending`: the model reviews what earlier runs' budgets left waiting."""

from __future__ import annotations

import sys

import click

from logwarden.app.config import get_settings
from logwarden.cli.common import (
    db_option,
    err_console,
    handle_errors,
    json_option,
    make_engine_options,
    model_options,
    open_store_from,
    print_json,
)


@click.command()
@click.option("--pending", is_flag=True, required=True,
              help="Review the prompts waiting in the store, most suspicious first (required: nothing else is reviewed).")
@model_options(budget=True)
@db_option
@json_option
@handle_errors
def review(pending, llm_budget, db_url, as_json, **engine_kw):
    """Let the model review what is awaiting review (a run's budget ran out), within a budget."""
    from logwarden.app.pending import review_pending

    done = review_pending(open_store_from(db_url, readonly=False), make_engine_options(engine_kw), get_settings(),
                          llm_budget=llm_budget, on_loading=_loading)
    m = done.metrics
    if m is None:
        _report({"reviewed": 0, "awaiting_review": 0}, as_json, "nothing awaits review")
        return
    _report({"reviewed": done.reviewed, "awaiting_review": done.left, "model_calls": m.llm_calls,
             "model_failures": m.llm_failures, "judged_normal": m.deviations_dismissed,
             "budget": m.budget, "prompt_tokens": m.usage.prompt_tokens}, as_json,
            f"reviewed {done.reviewed:,} of {done.waiting:,} waiting prompt(s); {done.left:,} still await review")
    sys.exit(1 if m.llm_failures else 0)


def _loading(waiting: int) -> None:
    err_console.print(f"loading model … ({waiting:,} prompt(s) await review)", highlight=False)


def _report(report: dict, as_json: bool, line: str) -> None:
    if as_json:
        print_json(report)
    else:
        err_console.print(line, highlight=False)
