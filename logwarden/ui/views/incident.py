"""Incident detail page: the story, the ATT&CK tactics strip, a timeline of its records per host
(each linking to its record page, with its evidence lines), its entities, and the incident's review.

The incident id comes from the `id` query parameter (the Incidents page links here with it) or the
id box. Log-derived and model-written text is markdown-escaped or shown as code/dataframes.
"""

from __future__ import annotations

import getpass
import html

import pandas as pd
import streamlit as st

from logwarden.app.store.feedback import story_judged
from logwarden.app.textgate import rejected_note
from logwarden.errors import LogwardenError
from logwarden.ui import data
from logwarden.ui.charts import incident_timeline
from logwarden.ui.feedback import feedback_form
from logwarden.ui.text import escape_markdown

TACTICS = ("Reconnaissance", "Resource Development", "Initial Access", "Execution", "Persistence",
           "Privilege Escalation", "Defense Evasion", "Credential Access", "Discovery", "Lateral Movement",
           "Collection", "Command and Control", "Exfiltration", "Impact")
EVIDENCE_SHOWN = 5
LEVEL_BADGES = {"info": "gray", "low": "blue", "medium": "orange", "high": "orange", "critical": "red"}  # :red[…]


def render() -> None:
    st.title("Incident detail")
    url = data.db_url()
    incident_id = _incident_id()
    if not incident_id:
        st.info("Pick an incident on the Incidents page, or paste its id above.")
        return
    try:
        incident = data.incident(url, incident_id)
    except LogwardenError as exc:  # an ambiguous id prefix
        st.error(escape_markdown(str(exc), one_line=True))
        return
    if incident is None:
        st.error(f"No incident with id {escape_markdown(incident_id, one_line=True)}.")
        return
    members = data.incident_members(url, incident.id)
    _header(incident)
    _story(incident)
    if incident.story_by == "llm":
        feedback_form(url, "story", lambda: incident.id, key=f"story_{incident.id}",
                      judged=story_judged(incident.model_dump()), target_id=incident.id)
    _tactics_strip(incident.tactics)
    _timeline(members)
    _entities(incident)
    _review(url, incident)


def _incident_id() -> str:
    given = st.query_params.get("id", "")
    typed = st.text_input("Incident id", value=given, key=f"incident_id_{given}").strip()
    if typed and typed != given:
        st.query_params["id"] = typed
    return typed


def _header(i) -> None:
    st.subheader(escape_markdown(i.title, one_line=True))
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Risk", i.risk_level)
    c2.metric("Records", len(i.record_ids))
    c3.metric("Status", data.review_choice(i.status, i.close_reason))
    c4.metric("Owner", escape_markdown(i.owner, one_line=True) if i.owner else "-")
    st.caption(escape_markdown(f"{i.id} · {i.category} · {i.first_ts} → {i.last_ts} · hosts "
                               f"{', '.join(i.hosts) or '-'} · linked by {', '.join(i.pivots) or '-'}", one_line=True))


def _story(i) -> None:
    st.markdown("### Story")
    if i.story_by != "llm":
        st.caption("No grounded story from the model (rules-only run, budget spent, or nothing it wrote "
                   "was grounded in the records): the title is logwarden's own.")
        return
    st.markdown(escape_markdown(i.summary) or "—")
    if i.stages:
        st.markdown("**Kill chain:** " + " → ".join(escape_markdown(s, one_line=True) for s in i.stages))
    for step in i.next_steps:
        st.markdown(f"- {escape_markdown(step, one_line=True)}")
    cited = ", ".join(c[:12] for c in i.cited)
    st.caption(escape_markdown(f"Written by {i.model or 'the model'}, citing {cited}; every id checked to be "
                               "this incident's, every entity to occur in its records.", one_line=True))
    if i.ungrounded:
        st.caption(escape_markdown("Removed — named but not in the records: " + ", ".join(i.ungrounded),
                                   one_line=True))
    if i.rejected:
        st.caption(escape_markdown(rejected_note(i.rejected), one_line=True))


def _tactics_strip(seen: list[str]) -> None:
    """The ATT&CK tactics in kill-chain order, those the incident shows lit."""
    st.markdown("### ATT&CK tactics")
    cells = []
    for tactic in TACTICS:
        lit = tactic in seen
        style = ("background:#c0392b;color:#fff" if lit else "background:#f4f5f7;color:#9aa5b1")
        cells.append(f'<span class="lw-tactic" data-lit="{str(lit).lower()}" style="{style};padding:4px 8px;'
                     f'margin:2px;border-radius:4px;display:inline-block;font-size:0.8rem">{html.escape(tactic)}</span>')
    st.html(f'<div data-testid="lw-tactics">{"".join(cells)}</div>')


def _timeline(members) -> None:
    st.markdown("### Timeline per host")
    hosts = list(dict.fromkeys(r.host or "(no host)" for r in members))
    timed = [(r.host or "(no host)", r.first_ts, r.risk_level, r.category, r.id[:12]) for r in members if r.first_ts]
    if timed:
        st.altair_chart(incident_timeline(timed), width="stretch")
    for host in hosts:
        st.markdown(f"**{escape_markdown(host, one_line=True)}**")
        for r in (m for m in members if (m.host or "(no host)") == host):
            _timeline_row(r)


def _timeline_row(r) -> None:
    when = f"{r.first_ts:%Y-%m-%d %H:%M:%S}" if r.first_ts else "-"
    anomaly = escape_markdown(" ".join(r.anomaly.split())[:160], one_line=True)
    st.markdown(f"`{when}` :{LEVEL_BADGES[r.risk_level]}[{r.risk_level}] {r.category} · "
                f"[{r.id[:12]}](record?id={r.id[:12]}) — {anomaly}")
    if r.evidence.exemplars:
        with st.expander(f"evidence of {r.id[:12]} ({len(r.evidence.line_numbers)} lines)"):
            lines = sorted(r.evidence.exemplars, key=lambda e: e.line_no)[:EVIDENCE_SHOWN]
            st.code("\n".join(f"{e.line_no:>7}  {e.text}" for e in lines), language=None, wrap_lines=True)


def _entities(i) -> None:
    st.markdown("### Entities")
    rows = [{"kind": kind, "value": value} for kind, values in i.entities.items() for value in values]
    st.dataframe(pd.DataFrame(rows, columns=["kind", "value"]), hide_index=True, width="stretch")


def _review(url: str, i) -> None:
    st.markdown("### Review")
    keys = {name: f"inc_review_{name}_{i.id}" for name in ("status", "owner", "note", "reviewer")}
    st.session_state.setdefault(keys["status"], data.review_choice(i.status, i.close_reason))
    st.session_state.setdefault(keys["owner"], i.owner or "")
    st.session_state.setdefault(keys["reviewer"], _default_reviewer())
    if saved := st.session_state.pop("inc_review_saved", None):
        st.success(f"Review saved: {saved}")
    if data.read_only():
        st.info("Read-only dashboard (reachable from the network without a password): reviews are off.")
    else:
        with st.form(f"inc_review_{i.id}"):
            st.selectbox("Status", data.REVIEW_CHOICES, key=keys["status"],
                         help="A new status goes to every record of the incident too.")
            st.text_input("Owner", key=keys["owner"])
            st.text_area("Analyst note", key=keys["note"])
            st.text_input("Reviewer", key=keys["reviewer"])
            st.form_submit_button("Save incident review", type="primary", on_click=_save, args=(url, i.id, keys))
    history = data.incident_reviews(url, i.id)
    if history:
        st.dataframe(pd.DataFrame([{"when": h["created_at"], "from": h["old_status"] or "",
                                    "status": data.review_choice(h["status"], h["close_reason"]),
                                    **{k: h[k] for k in ("owner", "reviewer", "note")}} for h in history]),
                     hide_index=True, width="stretch")


def _save(url: str, incident_id: str, keys: dict[str, str]) -> None:
    state = st.session_state
    changed = data.review_incident(url, incident_id, choice=state[keys["status"]],
                                   owner=state[keys["owner"]].strip(), note=state[keys["note"]].strip(),
                                   reviewer=state[keys["reviewer"]].strip())
    state[keys["note"]] = ""
    state["inc_review_saved"] = f"{state[keys['status']]} ({changed} record{'s' if changed != 1 else ''} too)"


def _default_reviewer() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


render()
