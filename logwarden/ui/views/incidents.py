"""Incidents page: the attack stories of the store, riskiest first, each linking to its page.

Log-derived text (titles, hosts) is shown in a dataframe, never as markdown.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from logwarden.schemas import RISK_LEVELS
from logwarden.schemas.record import STATUSES
from logwarden.ui import data


def render() -> None:
    st.title("Incidents")
    st.caption("Records that share a host, account, address, logon or file within a time gap, across windows, "
               "files, hosts and runs; a busy pivot (a domain controller, a proxy) links nothing.")
    url = data.db_url()
    c1, c2 = st.columns(2)
    min_risk = c1.selectbox("Minimum risk", RISK_LEVELS, index=1, key="inc_min_risk")
    statuses = c2.multiselect("Status", STATUSES, key="inc_status")
    found = data.incidents(url, min_risk=min_risk, statuses=tuple(statuses))
    st.caption(f"{len(found)} incidents")
    if not found:
        st.info("No incident at this level. `logwarden analyze` groups what it stores; "
                "`logwarden incidents group` regroups a whole store.")
        return
    st.dataframe(pd.DataFrame([_row(i) for i in found]), hide_index=True, width="stretch", key="incidents_table",
                 column_config={"open": st.column_config.LinkColumn("open", display_text="open")})


def _row(i) -> dict:
    return {"open": f"incident?id={i.id}", "risk": i.risk_level, "status": i.status, "records": len(i.record_ids),
            "first event": i.first_ts, "hosts": ", ".join(i.hosts), "title": i.title,
            "story": "model" if i.story_by == "llm" else "rules", "id": i.id}


render()
