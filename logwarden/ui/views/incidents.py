"""Incidents page: the attack stories of the store, riskiest first, each linking to its page; the
total that match and pages of `PAGE_SIZE` (a broad run makes thousands).

Log-derived text (titles, hosts) is shown in a dataframe, never as markdown.
"""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from logwarden.schemas import RISK_LEVELS
from logwarden.schemas.record import STATUSES
from logwarden.ui import data

PAGE_SIZE = 500


def render() -> None:
    st.title("Incidents")
    st.caption("Records that share a host, account, address, logon or file within a time gap, across windows, "
               "files, hosts and runs; a busy pivot (a domain controller, a proxy) links nothing.")
    url = data.db_url()
    c1, c2 = st.columns(2)
    min_risk = c1.selectbox("Minimum risk", RISK_LEVELS, index=1, key="inc_min_risk")
    statuses = c2.multiselect("Status", STATUSES, key="inc_status")
    total = data.incident_count(url, min_risk=min_risk, statuses=tuple(statuses))
    page = _page(total, (min_risk, tuple(statuses)))
    found = data.incidents(url, min_risk=min_risk, statuses=tuple(statuses), limit=PAGE_SIZE,
                           offset=(page - 1) * PAGE_SIZE)
    first = (page - 1) * PAGE_SIZE + 1
    st.caption(f"{total:,} incidents" + (f" · {first:,}–{first + len(found) - 1:,} shown, page {page} of "
                                         f"{math.ceil(total / PAGE_SIZE)}" if total > PAGE_SIZE else ""))
    if not found:
        st.info("No incident at this level. `logwarden analyze` groups what it stores; "
                "`logwarden incidents group` regroups a whole store.")
        return
    st.dataframe(pd.DataFrame([_row(i) for i in found]), hide_index=True, width="stretch", key="incidents_table",
                 column_config={"open": st.column_config.LinkColumn("open", display_text="open")})


def _page(total: int, filters: tuple) -> int:
    """The page picked (1 when the filters change: the old page may not exist any more); none below a page."""
    pages = max(1, math.ceil(total / PAGE_SIZE))
    if st.session_state.get("inc_last_filters") != filters or st.session_state.get("inc_page", 1) > pages:
        st.session_state["inc_page"] = 1
        st.session_state["inc_last_filters"] = filters
    if pages == 1:
        return 1
    return int(st.number_input("Page", min_value=1, max_value=pages, step=1, key="inc_page"))


def _row(i) -> dict:
    return {"open": f"incident?id={i.id}", "risk": i.risk_level, "status": data.review_choice(i.status, i.close_reason), "records": len(i.record_ids),
            "first event": i.first_ts, "hosts": ", ".join(i.hosts), "title": i.title,
            "story": "model" if i.story_by == "llm" else "rules", "id": i.id}


render()
