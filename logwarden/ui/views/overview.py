"""Overview page: KPIs, risk over time, categories, top IPs / users / hosts, the ATT&CK matrix.

Everything is an SQL aggregate over the sidebar scope (cached per query in `data.py`): the page
never loads records, only counts. A click on a bar opens the Records page filtered to it (its
level, category, address, user or host, passed in the URL). Knows nothing of individual records.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from logwarden.schemas import RISK_LEVELS
from logwarden.ui import charts, data
from logwarden.ui.scope import current_scope

TOP_TITLES = {"ips": "Source IPs", "users": "Users", "hosts": "Hosts"}


def render() -> None:
    st.title("Overview")
    choice = st.segmented_control("Time bucket", ["auto", "hour", "day"], default="auto", required=True,
                                  key="ov_bucket")
    url, key = data.db_url(), data.filter_key(current_scope())
    kpis = data.kpis(url, key)
    _kpis(kpis)
    if not kpis["records"]:
        st.info("No records in this scope. Analyse logs with `logwarden analyze PATH`, or widen the time range.")
        return
    over_time = data.risk_over_time(url, key)
    st.subheader("Risk over time")
    clicked = st.altair_chart(charts.risk_over_time(over_time, charts.pick_bucket(over_time, choice)), width="stretch",
                              on_select="rerun", key="ov_time_chart")
    _open_records(clicked, "level", "risk")
    _breakdowns(url, key)
    _techniques(url, key)


def _open_records(clicked: Any, field: str, param: str) -> None:
    """A clicked bar → the Records page, filtered to what the bar counts."""
    points = (clicked or {}).get("selection", {}).get("pick") or []
    value = next((p.get(field) for p in points if p.get(field)), None)
    if value:
        st.switch_page("views/records.py", query_params={param: str(value), "view": "Queue"})


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


def _breakdowns(url: str, key: data.FilterKey) -> None:
    left, right = st.columns(2)
    with left:
        st.subheader("Categories")
        clicked = st.altair_chart(charts.by_category(data.categories(url, key)), width="stretch",
                                  on_select="rerun", key="ov_category_chart")
        _open_records(clicked, "category", "category")
    with right:
        # One indicator kind at a time: each is a scan of every record's JSON (≈0.5 s at 100k).
        kind = st.segmented_control("Top", list(TOP_TITLES), format_func=TOP_TITLES.__getitem__, default="ips",
                                    required=True, key="ov_top_kind")
        rows = data.top_indicators(url, key, kind)
        if rows:
            clicked = st.altair_chart(charts.top_values(rows, kind[:-1]), width="stretch", on_select="rerun",
                                      key=f"ov_top_{kind}")
            _open_records(clicked, kind[:-1], "host" if kind == "hosts" else "q")
        else:
            st.caption("none in this scope")


def _techniques(url: str, key: data.FilterKey) -> None:
    st.subheader("ATT&CK tactics × techniques")
    rows = data.techniques(url, key)
    table = charts.technique_table(rows)
    if table.empty:
        st.caption("No technique mapped in this scope.")
        return
    st.dataframe(table, hide_index=True, width="stretch", key="ov_techniques",
                 column_config={"link": st.column_config.LinkColumn("ATT&CK page", display_text="open")})
    st.markdown("**The matrix** (tactics in kill-chain order, techniques with their names and record counts)")
    st.dataframe(charts.technique_matrix(rows), hide_index=True, width="stretch", key="ov_matrix")


render()
