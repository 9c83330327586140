"""`logwarden feedback record|story|triage ID --accept|--reject` and `feedback list`: judging what the model said.

An analyst accepts or rejects the model's judgement — a record's verdict and text, an incident's
story, a triage answer (`logwarden triage` with a model prints its id) — with a reason of a fixed set
(`schemas/feedback.py`); the store keeps the text judged with the verdict (app/store/feedback.py), for
retrieval to read later. An id is the one the lists print, or any unique prefix; an unknown id, a
rules' judgement or a reason of the other verdict is a usage error (exit 2). `list` only reads: it
never creates or migrates a store.
"""

from __future__ import annotations

import dataclasses

import click

from logwarden.cli.common import db_option, err_console, handle_errors, json_option, login, open_store_from, print_json
from logwarden.cli.terminal import shown
from logwarden.schemas.feedback import ACCEPT_REASONS, FEEDBACK_KINDS, FEEDBACK_REASONS, REJECT_REASONS

KIND_HELP = {"record": "a record's model verdict and text (`records list` shows the ids)",
             "story": "an incident's model-written story (`incidents list` shows the ids)",
             "triage": "the model's answer to a triage snippet (`logwarden triage` prints its id)"}


@click.group()
def feedback() -> None:
    """Accept or reject the model's judgements (a record's text, an incident's story, a triage answer)
    with a reason, and list that feedback.

    Reasons: correct (accept); wrong_category, wrong_severity, wrong_technique, hallucinated,
    missed_threat, not_a_threat, unhelpful (reject)."""


def _judge_command(kind: str) -> click.Command:
    @click.argument("target_id", metavar="ID")
    @click.option("--accept", "verdict", flag_value="accept", help="The model got it right.")
    @click.option("--reject", "verdict", flag_value="reject", help="The model got it wrong (needs --reason).")
    @click.option("--reason", type=click.Choice(FEEDBACK_REASONS), default=None,
                  help=f"Why: {', '.join(ACCEPT_REASONS)} (accept, its default) or "
                       f"{', '.join(REJECT_REASONS)} (reject).")
    @click.option("--note", default=None, help="A note for whoever reads the feedback later.")
    @click.option("--reviewer", default=None, help="Who judged it (default: the login name).")
    @db_option
    @json_option
    @handle_errors
    def judge(target_id, verdict, reason, note, reviewer, db_url, as_json):
        if verdict is None:
            raise click.UsageError("give --accept or --reject")
        store = open_store_from(db_url, create=False)
        written = store.add_feedback(kind, target_id, verdict=verdict, reason=reason, note=note,
                                     reviewer=reviewer or login())
        if as_json:
            print_json(_as_json(written))
            return
        err_console.print(shown(f"{kind} {written.target_id}: {verdict}ed ({written.reason})"
                                + (f" — {note}" if note else "")), highlight=False, markup=False)

    judge.__doc__ = f"Accept or reject {KIND_HELP[kind]}."
    return click.command(kind)(judge)


for _kind in FEEDBACK_KINDS:
    feedback.add_command(_judge_command(_kind))


@feedback.command("list")
@click.option("--kind", type=click.Choice(FEEDBACK_KINDS), default=None, help="Only feedback on this kind.")
@click.option("--id", "target_id", default=None, help="Only feedback on this exact record, incident or triage id.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Most rows, newest first.")
@db_option
@json_option
@handle_errors
def list_feedback(kind, target_id, limit, db_url, as_json):
    """List the feedback given, newest first (with --json: the text judged and its lines too)."""
    store = open_store_from(db_url, readonly=True, create=False)
    rows = store.list_feedback(kind, target_id, limit=limit)
    if as_json:
        print_json([_as_json(row) for row in rows])
        return
    if not rows:
        err_console.print("no feedback yet: give some with `logwarden feedback record|story|triage ID --accept|--reject`",
                          highlight=False, markup=False)
    for row in rows:
        fields = (row.created_at.isoformat(timespec="seconds"), row.kind, row.target_id, row.verdict, row.reason,
                  row.reviewer or "-", row.note or "")
        click.echo("\t".join(map(shown, fields)))  # tab-separated, one a line: a note's own tabs are shown


def _as_json(row) -> dict:
    return {**dataclasses.asdict(row), "created_at": row.created_at.isoformat()}
