"""Overview page: KPIs, risk over time, categories, top IPs / users / hosts, ATT&CK table.

Everything is an SQL aggregate over the sidebar scope (see `data.overview`), so the page costs
the same few queries on a thousand records or a million. Knows nothing of individual records.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from logwarden.schemas import RISK_LEVELS
from logwarden.ui import charts, data
from logwarden.ui.scope import current_scope

TOP_TITLES = {"ips": "Top source IPs", "users": "Top users", "hosts": "Top hosts"}


def render() -> None:
    st.title("Overview")
    choice = st.segmented_control("Time bucket", ["auto", "hour", "day"], default="auto", required=True,
                                  key="ov_bucket")
    found = data.overview(data.db_url(), data.filter_key(current_scope()))
    bucket = charts.pick_bucket(found.over_time, choice)
    _kpis(found.kpis)
    if not found.kpis["records"]:
        st.info("No records in this scope. Analyse logs with `logwarden analyze PATH`, or widen the time range.")
        return
    st.subheader("Risk over time")
    st.altair_chart(charts.risk_over_time(found.over_time, bucket), width="stretch")
    _breakdowns(found)
    _techniques(found)


def _kpis(kpis: dict[str, Any]) -> None:
    columns = st.columns(len(RISK_LEVELS) + 1)
    columns[0].metric("Records", f"{kpis['records']:,}")
    for column, level in zip(columns[1:], RISK_LEVELS):
        column.metric(level.capitalize(), f"{kpis['records_by_risk'][level]:,}")
    left, middle, right, last = st.columns(4)
    left.metric("Open high/critical", f"{kpis['open_high_critical']:,}")
    middle.metric("Sources", f"{kpis['sources']:,}", help=f"{kpis['tracked_sources']} files tracked in total")
    right.metric("Lines analysed", f"{kpis['lines_analysed']:,}")
    run = kpis["last_run"]
    last.metric(f"Last run ({run['status']})" if run else "Last run",
                f"{run['started_at']:%m-%d %H:%M}" if run else "never",
                help=f"{run['command']} started {run['started_at']:%Y-%m-%d %H:%M:%S} UTC" if run else None)


def _breakdowns(found: data.Overview) -> None:
    left, right = st.columns(2)
    with left:
        st.subheader("Categories")
        st.altair_chart(charts.by_category(found.categories), width="stretch")
    for column, kind in zip((right, *st.columns(2)), data.TOP_KINDS):
        with column:
            st.subheader(TOP_TITLES[kind])
            rows = found.top[kind]
            if rows:
                st.altair_chart(charts.top_values(rows, kind[:-1]), width="stretch")
            else:
                st.caption("none in this scope")


def _techniques(found: data.Overview) -> None:
    st.subheader("ATT&CK tactics × techniques")
    table = charts.technique_table(found.techniques)
    if table.empty:
        st.caption("No technique mapped in this scope.")
        return
    st.dataframe(table, hide_index=True, width="stretch", key="ov_techniques",
                 column_config={"link": st.column_config.LinkColumn("ATT&CK page", display_text="open")})
    with st.expander("As a matrix"):
        st.dataframe(charts.technique_matrix(found.techniques), width="stretch")


render()
