"""The record page's baseline section: each deviation a record carries, with Accept (it joins the
baseline) and Mute (never reported again) — the same actions as `logwarden baseline accept|mute`.
Knows nothing of how deviations are found; refs are read back from the record's text."""

from __future__ import annotations

import streamlit as st

from logwarden.app.baseline.deviation import Ref, refs_in
from logwarden.schemas import RiskRecord
from logwarden.ui import data


def deviation_actions(url: str, record: RiskRecord) -> None:
    refs = refs_in(f"{record.anomaly} {record.trace}")
    if not refs:
        return
    st.subheader("Baseline deviations")
    st.caption("Accept: what the deviation names becomes normal for its site or host. Mute: never report it again.")
    if done := st.session_state.pop("deviation_done", None):
        st.success(done)
    for i, ref in enumerate(refs):
        parsed = Ref.parse(ref)
        st.text(f"{parsed.kind} · {parsed.scope} · {' · '.join(p for p in parsed.parts if p)}")
        accept, mute = st.columns(2)
        if accept.button("Accept", key=f"deviation_accept_{i}"):
            st.session_state["deviation_done"] = f"Accepted: {data.accept_deviation(url, ref)}"
            st.rerun()
        if mute.button("Mute", key=f"deviation_mute_{i}"):
            data.mute_deviation(url, ref)
            st.session_state["deviation_done"] = f"Muted: {ref}"
            st.rerun()
