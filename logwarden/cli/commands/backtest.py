"""`logwarden backtest`: the model replayed over the records analysts closed, with the reviewed examples
in its prompts and without, in one run: agreement with the analysts' verdicts, recall of their true
positives and the false-positive rate, per arm (`app/backtest.py` says how each verdict is read).

Read-only: it never creates a store (a missing one is an error, exit 2), and writes nothing to it.
`--examples-db` draws the examples from another store's reviews (a held-out evaluation: the examples
from one side of a split, the replayed records from the other).
"""

from __future__ import annotations

import click

from logwarden.app.config import get_settings
from logwarden.cli.common import (
    db_option,
    err_console,
    handle_errors,
    json_option,
    load_engine,
    make_engine_options,
    model_options,
    open_store_from,
    print_json,
    sigma_option,
)
from logwarden.cli.progress import model_eta
from logwarden.errors import InputError

ARMS = ("retrieval", "no_retrieval")


@click.command()
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Replay at most N reviewed records: a seeded sample stratified by verdict and category.")
@click.option("--seed", type=int, default=7, show_default=True, help="The sample's seed (with --limit).")
@click.option("--k", "k", type=click.IntRange(min=1), default=None,
              help="Examples per prompt in the retrieval arm (default: LOGWARDEN_RETRIEVAL_K).")
@click.option("--examples-db", default=None,
              help="Draw the examples from this store's reviews instead of --db's (plus the seed library).")
@click.option("--no-seed", is_flag=True, help="Leave the shipped seed scenarios out of the examples.")
@sigma_option
@model_options()
@db_option
@json_option
@handle_errors
def backtest(limit, seed, k, examples_db, no_seed, sigma_paths, db_url, as_json, **engine_kw):
    """Replay the model over reviewed records, with and without retrieved examples, and score both."""
    from logwarden.app.backtest import run_backtest, sample
    from logwarden.app.detect import ruleset_for
    from logwarden.app.examples import ExamplePrompter, RetrievalOptions, store_source
    from logwarden.app.store import RecordFilter
    from logwarden.app.store.database import store_url

    settings = get_settings()
    store = open_store_from(db_url, readonly=True, create=False)
    closed = store.query_records(RecordFilter(statuses=["closed"]), order_by="updated_at", limit=1_000_000)
    cases = sample(closed, limit, seed)
    if not cases:
        raise InputError("no closed record with evidence lines to replay (duplicates are not replayed); "
                         "close some with `logwarden records review ID --status closed --reason ...`")
    library = store if examples_db is None else open_store_from(store_url(examples_db), readonly=True, create=False)
    source = store_source(library, limit=settings.retrieval_store_examples, seed=not no_seed)
    engine_opts = make_engine_options(engine_kw)
    err_console.print(f"replaying {len(cases)} of {len(closed)} closed record(s) × 2 arms; library: "
                      f"{len(source)} example(s); loading model …", highlight=False)
    engine = load_engine(engine_opts)
    retrieval = RetrievalOptions.from_settings(settings, k=k, enabled=True)
    prompter = ExamplePrompter(source, retrieval, engine.count_tokens, settings.prompt_token_budget)
    result = run_backtest(cases, engine, prompter, rules=ruleset_for(sigma_paths, settings),
                          max_new_tokens=settings.max_new_tokens, max_batch=engine_opts.max_batch, progress=_progress)
    if as_json:
        print_json(result.as_dict())
        return
    for name in ARMS:
        arm = result.arms[name].as_dict()
        err_console.print(f"{name}: agreement {_pct(arm['agreement'])} of {arm['cases'] - arm['no_verdict']} "
                          f"(no verdict {arm['no_verdict']}); recall of true positives {_pct(arm['recall'])} "
                          f"({arm['confirmed']}/{arm['positives']}); false-positive rate {_pct(arm['fp_rate'])} "
                          f"({arm['false_positives']}/{arm['negatives']}); raised to medium: {arm['added']} true, "
                          f"{arm['raised_negatives']} false",
                          highlight=False, markup=False)
    err_console.print(f"{result.records} record(s) in {result.seconds:,.0f} s", highlight=False)


def _progress(done: int, total: int, seconds: float) -> None:
    eta = model_eta(left=total - done, done=done, elapsed_s=seconds, unit="prompt", budget_s=None)
    err_console.print(f"backtest: {done}/{total} prompts, {eta.text()}", highlight=False, markup=False)


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{share:.1%}"
