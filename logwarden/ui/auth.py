"""The optional password gate: when `LOGWARDEN_UI_PASSWORD` is set, nothing renders until the
analyst types it. Compared in constant time; remembered for the browser session only.

Not a user system: one shared secret for a dashboard that binds to loopback by default.
"""

from __future__ import annotations

import hmac

import streamlit as st

from logwarden.app.config import Settings

AUTH_KEY = "lw_authenticated"


def password_ok(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def require_password() -> None:
    """Stop the script run unless no password is configured or the session has entered it."""
    expected = Settings().ui_password
    if not expected or st.session_state.get(AUTH_KEY):
        return
    st.title("logwarden")
    given = st.text_input("Password", type="password", key="lw_password")
    if given and password_ok(given, expected):
        st.session_state[AUTH_KEY] = True
        del st.session_state["lw_password"]  # do not keep the secret in session state
        st.rerun()
    if given:
        st.error("Wrong password. It is the value of LOGWARDEN_UI_PASSWORD where `logwarden ui` runs.")
    st.stop()
