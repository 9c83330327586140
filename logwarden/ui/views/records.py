"""Records page: the filtered, sorted, paginated table (all in SQL), open a record, downloads.

Page filters (risk, category, status, technique, text) add to the sidebar scope. Only one page
of rows is ever read; the downloads page through the whole filtered set when clicked.
Knows nothing of how a record is shown in detail (that is `record.py`).
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from logwarden.app.store import RecordFilter
from logwarden.schemas import CATEGORIES, RISK_LEVELS, RiskRecord
from logwarden.schemas.record import STATUSES
from logwarden.ui import data
from logwarden.ui.scope import scoped
from logwarden.ui.text import shorten

SORTS = {"Last event": "last_ts", "Risk": "risk_score", "First event": "first_ts", "Category": "category",
         "Source": "source", "Status": "status", "Lines": "line_count", "Stored": "created_at"}
PAGE_SIZES = (25, 50, 100, 200)
ANY = "any"


def render() -> None:
    st.title("Records")
    url, f = data.db_url(), _filters()
    key = data.filter_key(f)
    total = data.record_count(url, key)
    order_by, descending, size = _sorting()
    page = _page_picker(total, size, key)
    rows = data.record_page(url, key, order_by=order_by, descending=descending, limit=size,
                            offset=(page - 1) * size)
    st.caption(f"{total:,} matching records · page {page} of {max(1, math.ceil(total / size))}")
    st.dataframe(table(rows), hide_index=True, width="stretch", key="records_table",
                 column_config={"risk_score": st.column_config.ProgressColumn("score", min_value=0, max_value=100,
                                                                              format="%d")})
    _open_record(rows)
    _downloads(url, key, total)


def _filters() -> RecordFilter:
    c1, c2, c3 = st.columns(3)
    min_risk = c1.selectbox("Minimum risk", (ANY, *RISK_LEVELS), key="rec_min_risk")
    categories = c2.multiselect("Category", CATEGORIES, key="rec_categories", placeholder="any")
    statuses = c3.multiselect("Review status", STATUSES, key="rec_statuses", placeholder="any")
    c4, c5 = st.columns((1, 2))
    technique = c4.text_input("ATT&CK technique", key="rec_technique", placeholder="T1110 or T1110.001")
    text = c5.text_input("Search anomaly, trace, recommendation, indicators", key="rec_text")
    return scoped(min_risk=None if min_risk == ANY else min_risk, categories=tuple(categories),
                  statuses=tuple(statuses), technique=technique.strip() or None, text=text.strip() or None)


def _sorting() -> tuple[str, bool, int]:
    c1, c2, c3 = st.columns((2, 1, 1))
    sort = c1.selectbox("Sort by", list(SORTS), key="rec_sort")
    descending = c2.toggle("Descending", value=True, key="rec_desc")
    size = c3.selectbox("Rows per page", PAGE_SIZES, index=1, key="rec_size")
    return SORTS[sort], descending, size


def _page_picker(total: int, size: int, key: data.FilterKey) -> int:
    pages = max(1, math.ceil(total / size))
    # A new filter starts again at page 1 (page 7 of the old result may not exist any more).
    if st.session_state.get("rec_last_key") != key or st.session_state.get("rec_page", 1) > pages:
        st.session_state["rec_page"] = 1
        st.session_state["rec_last_key"] = key
    return int(st.number_input("Page", min_value=1, max_value=pages, step=1, key="rec_page"))


def table(rows: list[RiskRecord]) -> pd.DataFrame:
    """One line per record; log-derived text goes into cells, which render as plain text."""
    return pd.DataFrame([{
        "id": r.id[:12], "last event": r.last_ts, "risk": r.risk_level, "risk_score": r.risk_score,
        "category": r.category, "status": r.status, "source": r.source, "lines": f"{r.line_start}-{r.line_end}",
        "techniques": " ".join(t.id for t in r.techniques), "rules": ", ".join(r.detections),
        "anomaly": shorten(r.anomaly, 160),
    } for r in rows], columns=["id", "last event", "risk", "risk_score", "category", "status", "source", "lines",
                               "techniques", "rules", "anomaly"])


def _open_record(rows: list[RiskRecord]) -> None:
    if not rows:
        st.info("No record matches these filters.")
        return
    labels = {r.id: f"{r.id[:12]} · {r.risk_level} · {r.category} · {shorten(r.anomaly, 70)}" for r in rows}
    left, right = st.columns((4, 1), vertical_alignment="bottom")
    picked = left.selectbox("Record", list(labels), format_func=labels.__getitem__, key="rec_pick")
    if right.button("Open record", key="rec_open", type="primary"):
        st.switch_page("views/record.py", query_params={"id": picked})


def _downloads(url: str, key: data.FilterKey, total: int) -> None:
    left, right, _ = st.columns((1, 1, 3))
    left.download_button("Download CSV", lambda: data.records_csv(url, key), file_name="logwarden-records.csv",
                         mime="text/csv", on_click="ignore", disabled=not total, key="rec_csv")
    right.download_button("Download JSONL", lambda: data.records_jsonl(url, key),
                          file_name="logwarden-records.jsonl", mime="application/x-ndjson", on_click="ignore",
                          disabled=not total, key="rec_jsonl")


render()
