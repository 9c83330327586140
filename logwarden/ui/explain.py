"""The record page's Explain button: the model's narrative of the record, streamed as it is written
(the same path as `logwarden records explain`: triage's digest, grammar and grounding). Nothing is
stored; the text is shown as plain text, never as Markdown (it is model output about log data)."""

from __future__ import annotations

import streamlit as st

from logwarden.app.config import Settings
from logwarden.app.explain import explain
from logwarden.app.run_options import RunOptions
from logwarden.errors import LogwardenError
from logwarden.schemas import RiskRecord
from logwarden.ui.text import escape_markdown


def explain_button(record: RiskRecord) -> None:
    if not st.button("Explain (ask the model)", key=f"explain_{record.id}"):
        return
    from logwarden.ui.model import get_engine

    try:
        explanation = explain(record, get_engine(), RunOptions.from_settings(Settings()))
        shown = st.empty()
        text = ""
        for piece in explanation.stream:
            text += piece
            shown.text(text)
    except LogwardenError as exc:
        st.error(escape_markdown(str(exc), one_line=True))
        return
    grounded = explanation.report()["grounded_anomalies"]
    if grounded:
        st.caption(escape_markdown("Grounded in the evidence: " + " · ".join(grounded), one_line=True))
