"""Triage page: paste a line or snippet, watch the assessment stream in, store the records, and
accept or reject the model's answer (kept with the snippet when first judged: `ui/feedback.py`).

Runs the same parse → detect → digest path as batch analysis (`logwarden.app.triage.assess`, as
`logwarden triage` does), so rules set the floor here too. Rules-only is the default because
loading the model takes a while. Knows nothing of the engine's internals.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from logwarden.app.config import get_settings
from logwarden.app.run_options import RunOptions
from logwarden.app.store.feedback import triage_id
from logwarden.app.triage import assess
from logwarden.errors import LogwardenError
from logwarden.schemas import RiskRecord
from logwarden.ui import data
from logwarden.ui.feedback import feedback_form
from logwarden.ui.text import escape_markdown, shorten

RESULT_KEY = "triage_result"


@dataclass(frozen=True, slots=True)
class Result:
    """A snippet's assessment as the page keeps it between reruns."""

    records: list[RiskRecord]
    why: str
    snippet: str
    answer: str | None  # the model's answer as it wrote it; None: the rules alone
    model: str | None

    @property
    def verdict(self) -> str:
        return max(self.records, key=lambda r: r.risk_score).risk_level if self.records else "benign"


def render() -> None:
    st.title("Triage")
    text = st.text_area("Log line or snippet", height=160, key="triage_text",
                        placeholder="Nov 29 10:00:01 bastion-1 sshd[811]: Failed password for root from 203.0.113.7 …")
    use_model = st.toggle("Ask the model (the first use loads it, which takes a while)", key="triage_use_model")
    if st.button("Assess", type="primary", key="triage_assess"):
        if text.strip():
            st.session_state[RESULT_KEY] = _assess(text, use_model)
        else:
            st.warning("Paste at least one log line first.")
    result = st.session_state.get(RESULT_KEY)
    if result is not None:
        _show(result)


def _assess(text: str, use_model: bool) -> Result | None:
    """The snippet's records, why the verdict is what it is (rules only, the model unsure…) and the
    model's answer."""
    try:
        engine = _engine() if use_model else None
        st.caption(escape_markdown(data.engine_line(engine), one_line=True))
        assessment = assess(text, RunOptions.from_settings(get_settings()), engine)
        if assessment.stream is not None:
            st.caption("Model output (streamed)")
            show_stream(assessment.stream, st.empty())
        records = assessment.records()
        return Result(records, assessment.why(records), text, assessment.answer(),
                      engine.model_name if engine is not None else None)
    except LogwardenError as exc:
        st.error(escape_markdown(str(exc), one_line=True))
        return None


def _engine():
    from logwarden.ui.model import get_engine  # loads the model: only when the analyst asks for it

    return get_engine()


def show_stream(pieces, placeholder) -> str:
    """The model's answer as it streams, shown as plain text in a code block: what it repeats from
    the log (links, images, HTML, `:red[...]`) is never rendered as Markdown."""
    text = ""
    for piece in pieces:
        text += piece
        placeholder.code(text, language=None, wrap_lines=True)
    return text


def _show(result: Result) -> None:
    if not result.records:
        st.success(escape_markdown(f"Benign: {result.why}.", one_line=True))
    else:
        st.caption(escape_markdown(f"Why: {result.why}.", one_line=True))
    for r in result.records:
        with st.container(border=True):
            st.markdown(f"**{r.risk_level.upper()}** · {r.category} · decided by {r.decided_by}")
            st.markdown(escape_markdown(shorten(r.anomaly, 400)))
            st.json(r.model_dump(mode="json", exclude={"raw_model_output"}), expanded=False)
    if result.answer is not None:
        _answer_feedback(result, result.answer)
    if not result.records:
        return
    if data.read_only():
        st.caption("Read-only dashboard: records are not stored from here.")
        return
    if st.button(f"Store {len(result.records)} record(s)", key="triage_store"):
        data.store_records(data.db_url(), result.records)
        st.session_state.pop(RESULT_KEY, None)
        st.success(f"Stored: {', '.join(r.id[:12] for r in result.records)}. They are on the Records page now.")


def _answer_feedback(result: Result, answer: str) -> None:
    """The model's answer accepted or rejected; the answer is stored with its snippet when first judged."""
    url = data.db_url()

    def target() -> str:
        return data.triage_answer(url, snippet=result.snippet, answer=answer, verdict=result.verdict,
                                  model=result.model, record_ids=[r.id for r in result.records])

    found = triage_id(result.snippet, answer)
    feedback_form(url, "triage", target, key=f"triage_{found}", judged=answer, target_id=found)

render()
