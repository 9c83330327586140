"""The Streamlit audit UI: `app.py` is the entry script (`streamlit run`), `views/` the pages.

Reads and writes only through `logwarden.app.store` (via `data.py`). Knows nothing of parsing,
detection or the engine beyond the triage page's use of `logwarden.app.triage`.
"""
