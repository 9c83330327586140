"""The sidebar's time range and source picker: the scope that filters every page.

The entry script draws the sidebar on every run and leaves the scope in session state; pages
read it with `current_scope()` and add their own filters on top. Knows nothing of the pages.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, time, timedelta, timezone

import streamlit as st

from logwarden.app.store import RecordFilter
from logwarden.ui import data

SCOPE_KEY = "lw_scope"
PRESETS: dict[str, timedelta | None] = {
    "All time": None, "Last hour": timedelta(hours=1), "Last 24 hours": timedelta(days=1),
    "Last 7 days": timedelta(days=7), "Last 30 days": timedelta(days=30), "Custom range": None,
}


def render_sidebar(url: str) -> RecordFilter:
    with st.sidebar:
        st.subheader("Scope")
        since, until = _time_range()
        picked = st.multiselect("Sources", data.source_paths(url), key="scope_sources",
                                placeholder="All sources")
        if st.button("Refresh data", key="scope_refresh", help="Drop cached queries and read the store again."):
            st.cache_data.clear()
    scope = RecordFilter(since=since, until=until, sources=tuple(picked))
    st.session_state[SCOPE_KEY] = scope
    return scope


def current_scope() -> RecordFilter:
    return st.session_state.get(SCOPE_KEY) or RecordFilter()


def scoped(**page_filters) -> RecordFilter:
    """The sidebar scope plus a page's own filters."""
    return replace(current_scope(), **page_filters)


def _time_range() -> tuple[datetime | None, datetime | None]:
    preset = st.selectbox("Time range", list(PRESETS), key="scope_preset")
    if preset == "Custom range":
        return _custom_range()
    span = PRESETS[preset]
    return (datetime.now(timezone.utc) - span, None) if span else (None, None)


def _custom_range() -> tuple[datetime | None, datetime | None]:
    today = datetime.now(timezone.utc).date()
    picked = st.date_input("From – to (UTC)", value=(today - timedelta(days=7), today), key="scope_dates")
    days = list(picked) if isinstance(picked, (list, tuple)) else [picked]
    if not days:
        return None, None
    start = _day_start(days[0])
    end = _day_start(days[-1]) + timedelta(days=1) - timedelta(microseconds=1)
    return start, end


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=timezone.utc)
