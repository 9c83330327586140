"""`logwarden triage [TEXT|-]`: one line or snippet, the assessment streamed token by token."""

from __future__ import annotations

import json
import signal
import sys

import click

from logwarden.app.config import get_settings
from logwarden.app.safetext import from_os_bytes
from logwarden.app.textgate import rejected_note
from logwarden.cli.common import (
    StopRequest,
    db_option,
    err_console,
    exit_at_once,
    handle_errors,
    json_option,
    load_engine,
    make_engine_options,
    model_options,
    open_store_from,
    print_json,
    sigma_option,
)
from logwarden.cli.terminal import shown, shown_block
from logwarden.errors import InputError


@click.command()
@click.argument("text", required=False)
@click.option("--rules-only", is_flag=True, help="Only the deterministic detectors; no model.")
@click.option("--no-store", is_flag=True, help="Do not store the resulting record(s).")
@sigma_option
@model_options()
@db_option
@json_option
@handle_errors
def triage(text, rules_only, no_store, db_url, as_json, sigma_paths, **engine_kw):
    """Assess one log line or snippet (argument, or '-' / nothing for stdin), streaming the answer."""
    from logwarden.app.backends import facts_line, model_facts
    from logwarden.app.examples import store_source
    from logwarden.app.run_options import RunOptions
    from logwarden.app.triage import assess

    snippet = _read_snippet(text)
    engine_opts = make_engine_options(engine_kw)
    options = RunOptions.from_settings(get_settings(), rules_only=rules_only, max_batch=engine_opts.max_batch,
                                       sigma=sigma_paths)
    engine = None
    if not rules_only:
        engine = load_engine(engine_opts)
    facts = model_facts(engine)
    err_console.print(shown(facts_line(facts)), highlight=False, markup=False)
    store = None if no_store else open_store_from(db_url)
    examples = store_source(store) if store is not None and engine is not None and options.retrieval.enabled else None
    assessment = assess(snippet, options, engine, examples)
    if assessment.stream is not None:
        _print_stream(assessment.stream, out=sys.stderr if as_json else sys.stdout, engine=engine)
    records = assessment.records()
    answer_id = None if store is None else _store(store, snippet, assessment, records, facts)
    if as_json:
        print_json({**_report(assessment, records), "model": facts, "triage_id": answer_id})
        return
    _print_records(records, assessment)
    if answer_id is not None:
        click.echo(f"triage answer: {answer_id} (judge it: logwarden feedback triage {answer_id} "
                   "--accept | --reject --reason R)")


def _store(store, snippet, assessment, records, facts) -> str | None:
    """Store the records and the model's answer (for feedback); the answer's id, None when no model answered."""
    store.upsert_records(records)
    answer = assessment.answer()
    if answer is None:
        return None
    return store.add_triage_answer(snippet=snippet, answer=answer, verdict=_verdict(records)[0],
                                   model=facts.get("model"), record_ids=[r.id for r in records])


def _verdict(records) -> tuple[str, str]:
    """The snippet's verdict and category: the riskiest record's, benign without one."""
    if not records:
        return "benign", "benign"
    top = max(records, key=lambda r: r.risk_score)
    return top.risk_level, top.category


def _print_stream(stream, *, out, engine) -> None:
    """The answer as it streams, then its stats; a stop (Ctrl-C, SIGTERM) cancels it and exits."""
    stop = StopRequest(engine.cancel)
    with stop.installed():
        for piece in stream:
            out.write(shown_block(piece))  # the model may repeat what the log said: shown, never obeyed
            out.flush()
    if stop.signum is not None:
        err_console.print(f"\nstopped by {signal.Signals(stop.signum).name}: the answer was cancelled, nothing "
                          "stored", highlight=False)
        exit_at_once(128 + stop.signum)
    out.write("\n")
    _print_stats(stream)


def _read_snippet(text: str | None) -> str:
    """The snippet as text: bytes that are not UTF-8 (on stdin, or in an argument) become U+FFFD."""
    if text is None or text == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise InputError("give a log line as an argument, or pipe one on stdin (`… | logwarden triage -`)")
        stdin = getattr(sys.stdin, "buffer", None)
        text = stdin.read().decode("utf-8", "replace") if stdin is not None else sys.stdin.read()
    text = from_os_bytes(text)
    if not text.strip():
        raise InputError("the snippet is empty: nothing to triage")
    return text


def _print_stats(stream) -> None:
    g = stream.generation
    if g is None:
        return
    s = g.stats
    err_console.print(f"ttft {s.ttft_s * 1000:.0f} ms · {s.new_tokens} tokens · {s.tokens_per_s:.1f} tokens/s · "
                      f"prompt {s.prompt_tokens} tokens ({s.cached_prefix_tokens} cached)", highlight=False)


def _report(assessment, records) -> dict:
    """Everything triage knows, every time: the verdict, the model's answer as it gave it (whatever
    its schema), the generation's stats, and the records (none when benign)."""
    prepared, stream = assessment.triage, assessment.stream
    generation = stream.generation if stream is not None else None
    answer = _parsed(generation.text) if generation is not None else None
    verdict, category = _verdict(records)
    return {
        "verdict": verdict,
        "category": category,
        "format": prepared.format,
        "rules": sorted({s.rule_id for s in prepared.signals}),
        "rules_only": stream is None,
        "why": assessment.why(records),
        "model_unsure": assessment.unsure(),
        "assessment": answer,
        "model_output": generation.text if generation is not None and answer is None else None,
        "model_error": generation.error if generation is not None else
        ("the stream ended before the model finished" if stream is not None else None),
        "stats": generation.stats.as_dict() if generation is not None else None,
        "records": [r.model_dump(mode="json") for r in records],
    }


def _parsed(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def _print_records(records, assessment) -> None:
    why = assessment.why(records)
    if not records:
        click.echo(f"verdict: benign ({shown(why)})")
    for r in records:
        click.echo(f"[{r.risk_level.upper()}] {r.category} ({r.decided_by}) rules: {shown(', '.join(r.detections) or '-')}")
        click.echo(f"  anomaly: {shown(r.anomaly)}\n  trace: {shown(r.trace)}\n  recommendation: {shown(r.recommendation)}")
        if r.techniques:
            click.echo("  ATT&CK: " + shown(", ".join(f"{t.id} {t.name}" for t in r.techniques)))
        if r.llm_error:
            click.echo(f"  model: {shown(r.llm_error)}")
        if r.rejected:
            click.echo(f"  {shown(rejected_note(r.rejected))}")
    if records:
        click.echo(f"why: {shown(why)}")
