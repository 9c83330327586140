"""Export page: the records of the current scope and filters in the five SIEM formats, as downloads.

The scope comes from the sidebar and a minimum risk from this page; the lines come from
`logwarden.app.export`, generated only when a download is clicked. Knows nothing of the formats.
"""

from __future__ import annotations

import streamlit as st

from logwarden.schemas import RISK_LEVELS
from logwarden.ui import data
from logwarden.ui.scope import scoped

FORMATS = {  # format → (label, file name, mime)
    "jsonl": ("JSON Lines", "logwarden.jsonl", "application/x-ndjson"),
    "ecs": ("Elastic Common Schema", "logwarden-ecs.ndjson", "application/x-ndjson"),
    "ocsf": ("OCSF Detection Finding", "logwarden-ocsf.ndjson", "application/x-ndjson"),
    "splunk-hec": ("Splunk HEC events", "logwarden-hec.json", "application/json"),
    "cef": ("ArcSight CEF", "logwarden.cef", "text/plain"),
}


def render() -> None:
    st.title("Export")
    url = data.db_url()
    min_risk = st.selectbox("Minimum risk", ("any", *RISK_LEVELS), key="export_min_risk")
    key = data.filter_key(scoped(min_risk=None if min_risk == "any" else min_risk))
    total = data.record_count(url, key)
    st.caption(f"{total:,} records in the sidebar scope at this risk. Files are generated when you click.")
    for fmt, (label, file_name, mime) in FORMATS.items():
        st.download_button(f"{label} ({fmt})", _generator(url, key, fmt), file_name=file_name, mime=mime,
                           on_click="ignore", disabled=not total, key=f"export_{fmt}")


def _generator(url: str, key: data.FilterKey, fmt: str):
    return lambda: data.export_text(url, key, fmt)


render()
