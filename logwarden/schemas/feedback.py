"""Feedback on the model's judgements (issue 42 item 3): the words an analyst accepts or rejects with.

What can be judged (`FEEDBACK_KINDS`): a record's model-written verdict and text (`record`), an
incident's model-written story (`story`), the model's answer to a triage snippet (`triage`). A
judgement is `accept` or `reject`, with one reason of a fixed set, so that what the model got wrong
can be counted and retrieved:

- `correct` (accept): the verdict and text are right and usable as they are.
- `wrong_category`: the category is not what the lines show.
- `wrong_severity`: the risk level is too high or too low.
- `wrong_technique`: the ATT&CK technique(s) do not fit the lines.
- `hallucinated`: the text names hosts, users, addresses or events the lines do not hold.
- `missed_threat`: an attack in the lines was called benign or left out.
- `not_a_threat`: benign activity judged an attack (a false positive of the model).
- `unhelpful`: right, but too vague or generic to act on (the steps, the story).

Knows nothing of the store or the terminals.
"""

from __future__ import annotations

FEEDBACK_KINDS: tuple[str, ...] = ("record", "story", "triage")
VERDICTS: tuple[str, ...] = ("accept", "reject")
ACCEPT_REASONS: tuple[str, ...] = ("correct",)
REJECT_REASONS: tuple[str, ...] = ("wrong_category", "wrong_severity", "wrong_technique", "hallucinated",
                                   "missed_threat", "not_a_threat", "unhelpful")
FEEDBACK_REASONS: tuple[str, ...] = (*ACCEPT_REASONS, *REJECT_REASONS)


def feedback_reason(verdict: str, reason: str | None) -> str:
    """The reason a judgement is stored with (accept: `correct` when none is given), or ValueError
    saying what is wrong: an unknown verdict or reason, a reject without a reason, a reason of the
    other verdict."""
    if verdict not in VERDICTS:
        raise ValueError(f"the verdict is accept or reject, not {verdict!r}")
    allowed = ACCEPT_REASONS if verdict == "accept" else REJECT_REASONS
    if reason is None and verdict == "accept":
        return ACCEPT_REASONS[0]
    if reason is None:
        raise ValueError(f"a reject needs a reason: {', '.join(REJECT_REASONS)}")
    if reason not in allowed:
        raise ValueError(f"{reason!r} is not a reason to {verdict} (reasons to {verdict}: {', '.join(allowed)})")
    return reason
