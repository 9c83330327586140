"""Triage page: paste a line or snippet, watch the assessment stream in, store the records.

Runs the same parse → detect → digest path as batch analysis (`logwarden.app.triage.assess`, as
`logwarden triage` does), so rules set the floor here too. Rules-only is the default because
loading the model takes a while. Knows nothing of the engine's internals.
"""

from __future__ import annotations

import streamlit as st

from logwarden.app.config import get_settings
from logwarden.app.pipeline import RunOptions
from logwarden.app.triage import assess
from logwarden.errors import LogwardenError
from logwarden.schemas import RiskRecord
from logwarden.ui import data
from logwarden.ui.text import escape_markdown, shorten

RESULT_KEY = "triage_result"


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


def _assess(text: str, use_model: bool) -> list[RiskRecord] | None:
    try:
        engine = _engine() if use_model else None
        assessment = assess(text, RunOptions.from_settings(get_settings()), engine)
        if assessment.stream is not None:
            st.caption("Model output (streamed)")
            show_stream(assessment.stream, st.empty())
        return assessment.records()
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


def _show(records: list[RiskRecord]) -> None:
    if not records:
        st.success("Benign: no rule fired and the model found nothing to report.")
        return
    for r in records:
        with st.container(border=True):
            st.markdown(f"**{r.risk_level.upper()}** · {r.category} · decided by {r.decided_by}")
            st.markdown(escape_markdown(shorten(r.anomaly, 400)))
            st.json(r.model_dump(mode="json", exclude={"raw_model_output"}), expanded=False)
    if data.read_only():
        st.caption("Read-only dashboard: records are not stored from here.")
        return
    if st.button(f"Store {len(records)} record(s)", key="triage_store"):
        data.store_records(data.db_url(), records)
        st.session_state.pop(RESULT_KEY, None)
        st.success(f"Stored: {', '.join(r.id[:12] for r in records)}. They are on the Records page now.")


render()
