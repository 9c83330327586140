"""The Streamlit audit UI: `serve.py` is the server `logwarden ui` starts (its door in `gate.py`),
`app.py` the entry script, `views/` the pages.

Reads and writes only through `logwarden.app.store` (via `data.py`). Knows nothing of parsing,
detection or the engine beyond the triage page's use of `logwarden.app.triage`.
"""

# How `logwarden ui` hands the access token to the server it starts (read once, then dropped from
# the environment so that nothing the server starts inherits it).
TOKEN_VARIABLE = "LOGWARDEN_UI_TOKEN"
