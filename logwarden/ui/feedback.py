"""Accept or reject the model's judgement where a page shows it: a record's verdict and text, an
incident's story, a triage answer (issue 42 item 3).

One form per judgement: the reason picker (why the model got it wrong), a note, who, and two buttons,
Accept (reason `correct`) and Reject (the reason picked); below it what was said before, and whether
that judged the text shown now or an earlier one the model has since rewritten. The words are
`schemas/feedback.py`'s; the rows the store's (app/store/feedback.py). A read-only dashboard shows the
feedback and offers no form. Knows nothing of how the pages lay out the rest.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable

import pandas as pd
import streamlit as st

from logwarden.app.store.feedback import sha256
from logwarden.schemas.feedback import REJECT_REASONS
from logwarden.ui import data

SAVED_KEY = "feedback_saved"


def feedback_form(url: str, kind: str, target: Callable[[], str], *, key: str, judged: str | None,
                  target_id: str | None = None) -> None:
    """The form for the judgement `kind` shown with the text `judged`; `target()` gives the id the
    feedback goes to (a triage answer is stored when it is first judged), `target_id` it where known."""
    st.markdown("**Was the model right?**")
    if saved := st.session_state.pop(f"{SAVED_KEY}_{key}", None):
        st.success(f"Feedback saved: {saved}.")
    if data.read_only():
        st.caption("Read-only dashboard: feedback is off.")
    else:
        keys = {name: f"feedback_{name}_{key}" for name in ("reason", "note", "reviewer")}
        st.session_state.setdefault(keys["reviewer"], _default_reviewer())
        with st.form(f"feedback_{key}", border=True):
            st.selectbox("Reason to reject", REJECT_REASONS, key=keys["reason"],
                         help="wrong_category, wrong_severity, wrong_technique: the verdict; hallucinated: names what "
                              "the lines do not hold; missed_threat / not_a_threat: attack called benign, or benign "
                              "called an attack; unhelpful: right but too vague to act on. Accept saves 'correct'.")
            st.text_input("Note (optional)", key=keys["note"])
            st.text_input("Judged by", key=keys["reviewer"])
            left, right = st.columns(2)
            args = (url, kind, target, keys, key)
            left.form_submit_button("Accept", key=f"feedback_accept_{key}", on_click=_save, args=(*args, "accept"))
            right.form_submit_button("Reject", key=f"feedback_reject_{key}", on_click=_save, args=(*args, "reject"))
    if target_id is not None:
        _given(url, kind, target_id, judged)


def _save(url: str, kind: str, target: Callable[[], str], keys: dict[str, str], key: str, verdict: str) -> None:
    """A callback: runs before the page is drawn again, so the note box can be emptied here."""
    state = st.session_state
    reason = state[keys["reason"]] if verdict == "reject" else None
    written = data.add_feedback(url, kind, target(), verdict=verdict, reason=reason,
                                note=state[keys["note"]].strip() or None, reviewer=state[keys["reviewer"]].strip() or None)
    state[keys["note"]] = ""
    state[f"{SAVED_KEY}_{key}"] = f"{verdict}ed ({written.reason})"


def _given(url: str, kind: str, target_id: str, judged: str | None) -> None:
    rows = data.feedback(url, kind, target_id)
    if not rows:
        return
    current = sha256(judged) if judged is not None else None
    st.dataframe(pd.DataFrame([{"when": f.created_at, "verdict": f.verdict, "reason": f.reason,
                                "reviewer": f.reviewer or "", "note": f.note or "",
                                "on": "this text" if f.judged_sha256 == current else "an earlier text"}
                               for f in rows]), hide_index=True, width="stretch", key=f"feedback_rows_{target_id}")


def _default_reviewer() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""
