"""Record detail page: the assessment, its evidence in context, provenance, and the review trail.

The record id comes from the `id` query parameter (the Records page links here with it) or the
id box. Log-derived text is shown with `st.text`/`st.code`/dataframes, or markdown-escaped.
Reviews append to the audit trail; nothing here edits a record otherwise.
"""

from __future__ import annotations

import getpass

import pandas as pd
import streamlit as st

from logwarden.app.store.feedback import record_judged
from logwarden.app.textgate import rejected_note
from logwarden.errors import LogwardenError
from logwarden.schemas import RiskRecord
from logwarden.ui import data
from logwarden.ui.deviations import deviation_actions
from logwarden.ui.evidence import changed_since_analysis, context_lines, format_lines, is_document
from logwarden.ui.explain import explain_button
from logwarden.ui.feedback import feedback_form
from logwarden.ui.style import SECTIONS, section_heading
from logwarden.ui.text import escape_markdown, technique_link


def render() -> None:
    st.title("Record detail")
    url = data.db_url()
    record_id = _record_id()
    if not record_id:
        st.info("Pick a record on the Records page, or paste its id above.")
        return
    try:
        record = data.record(url, record_id)
    except LogwardenError as exc:  # an ambiguous id prefix
        st.error(escape_markdown(str(exc), one_line=True))
        return
    if record is None:
        st.error(f"No record with id {escape_markdown(record_id, one_line=True)}. Copy an id from the Records page.")
        return
    _header(record)
    _incident(url, record)
    _assessment(record)
    _model_feedback(url, record)
    _evidence(record)
    _indicators_and_techniques(record)
    _provenance(record)
    explain_button(record)
    deviation_actions(url, record)
    _review(url, record)


def _record_id() -> str:
    given = st.query_params.get("id", "")
    typed = st.text_input("Record id", value=given, key=f"detail_id_{given}").strip()
    if typed and typed != given:
        st.query_params["id"] = typed
    return typed


def _header(r: RiskRecord) -> None:
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Risk", f"{r.risk_level} ({r.risk_score})")
    c2.metric("Category", r.category)
    c3.metric("Status", data.review_choice(r.status, r.close_reason))
    c4.metric("Decided by", r.decided_by)
    st.caption(escape_markdown(f"{r.source} · lines {r.line_start}–{r.line_end} ({r.line_count}) · "
                               f"{r.first_ts} → {r.last_ts} · host {r.host or '-'} · id {r.id}", one_line=True))


def _incident(url: str, r: RiskRecord) -> None:
    incident = data.incident_of(url, r.id)
    if incident is not None:
        st.markdown(f"Part of incident [{escape_markdown(incident.title, one_line=True)}](incident?id={incident.id}) "
                    f"· {len(incident.record_ids)} records · {incident.risk_level}")


def _assessment(r: RiskRecord) -> None:
    for english, chinese, name in SECTIONS:
        st.html(section_heading(english, chinese))  # constant text; the record's text below is escaped
        st.markdown(escape_markdown(getattr(r, name)) or "—")
    if r.ungrounded:
        st.caption(escape_markdown("Removed from the model's text — named but not in the digest it was shown: "
                                   + ", ".join(r.ungrounded), one_line=True))
    if r.rejected:
        st.caption(escape_markdown(rejected_note(r.rejected), one_line=True))
    if r.llm_error:
        st.warning(f"Model error: {escape_markdown(r.llm_error, one_line=True)}")


def _model_feedback(url: str, r: RiskRecord) -> None:
    """Accept or reject what the model judged of this record (its level, category and texts)."""
    if r.decided_by == "rules":
        return  # the rules' own text: nothing of the model's to judge
    feedback_form(url, "record", lambda: r.id, key=f"record_{r.id}", judged=record_judged(r), target_id=r.id)


def _evidence(r: RiskRecord) -> None:
    st.subheader("Evidence")
    refs = f" · the model pointed at {', '.join(r.evidence.refs)}" if r.evidence.refs else ""
    st.caption(escape_markdown(f"{len(r.evidence.line_numbers)} lines of {r.source}{refs}", one_line=True))
    stored = {line.line_no: line.text for line in r.evidence.exemplars}
    _evidence_lines(r)
    around = sorted(stored) or r.evidence.line_numbers[:20]
    lines = context_lines(r.source, around, marked=r.evidence.line_numbers)
    if lines is None:
        st.caption("Context lines: the file is not readable here (moved, rotated away, or not a file).")
        return
    with st.expander("In context (read from the file now; > marks evidence lines)", expanded=True):
        if not is_document(r.source) and changed_since_analysis(r.evidence.exemplars, lines):
            st.warning("The file's lines differ from the stored evidence: it was rotated or rewritten since.")
        st.code(format_lines(lines), language=None, wrap_lines=True)


def _evidence_lines(r: RiskRecord) -> None:
    """Each stored evidence line, wrapped, under its parsed key fields (stored with the record; an
    older record's are parsed again from the stored text)."""
    from logwarden.app.keyfields import key_fields

    for line in sorted(r.evidence.exemplars, key=lambda e: e.line_no):
        fields = list(line.fields.items()) or key_fields(line.text)
        if fields:
            st.caption(escape_markdown(" · ".join(f"{name}={value}" for name, value in fields), one_line=True))
        st.code(f"{line.line_no:>7}  {line.text}", language=None, wrap_lines=True)


def _indicators_and_techniques(r: RiskRecord) -> None:
    left, right = st.columns(2)
    with left:
        st.subheader("Indicators")
        rows = [{"kind": kind, "value": value} for kind, values in r.indicators.model_dump().items() for value in values]
        st.dataframe(pd.DataFrame(rows, columns=["kind", "value"]), hide_index=True, width="stretch")
    with right:
        st.subheader("ATT&CK techniques")
        for t in r.techniques:
            tactic = f" — {escape_markdown(t.tactic, one_line=True)}" if t.tactic else ""
            st.markdown(f"- {technique_link(t.id, t.name)}{tactic}")
        if not r.techniques:
            st.caption("none")
        st.subheader("Rules that fired")
        _rules(r.detections, r.rule_titles)


def _rules(rule_ids: list[str], titles: dict[str, str]) -> None:
    """Each rule's title and level, with its author's references and known false positives (a rule the
    settings' packs lack, given with `--sigma`, by the title its run saved)."""
    if not rule_ids:
        st.caption("none")
        return
    from logwarden.app.config import get_settings
    from logwarden.app.detect import describe_rules, ruleset_for

    for rule in describe_rules(rule_ids, ruleset_for((), get_settings())):
        level = f" [{rule['level']}]" if rule["level"] else ""
        rule["title"] = titles.get(rule["id"], rule["title"]) if rule["pack"] is None else rule["title"]
        # a pack's title is its author's text: a markdown image in it would be fetched when shown
        with st.expander(escape_markdown(f"{rule['title']}{level} — {rule['id']}", one_line=True)):
            if rule["description"]:
                st.text(rule["description"])
            if rule["falsepositives"]:
                st.markdown("**False positives:** " + "; ".join(escape_markdown(f, one_line=True)
                                                             for f in rule["falsepositives"]))
            for link in rule["references"]:
                st.markdown(f"- {escape_markdown(link, one_line=True)}")


def _provenance(r: RiskRecord) -> None:
    st.subheader("Provenance")
    facts = data.model_facts_of(data.db_url(), r)
    st.markdown(escape_markdown(data.model_line(facts), one_line=True))
    st.dataframe(pd.DataFrame([{"decided by": r.decided_by, "model": facts["model"] or "-", "quant": facts["quant"] or "-",
                                "adapter": facts["adapter"] or f"none: {facts['adapter_note']}",
                                "prompt": r.prompt_version, "schema": r.schema_version, "run": r.run_id or "-",
                                "stored": r.created_at}]), hide_index=True, width="stretch")
    if r.engine_stats:
        with st.expander("Engine stats"):
            st.json(r.engine_stats)
    if r.raw_model_output:
        with st.expander("Raw model output"):
            st.code(r.raw_model_output, language=None)


def _review(url: str, r: RiskRecord) -> None:
    """The form starts at the record's current status and keeps what the analyst picked: saving a
    note writes the status shown, never a reset one (the widgets are keyed per record, filled from
    the record on first show, and only the note is emptied after a save)."""
    st.subheader("Review")
    keys = {name: f"review_{name}_{r.id}" for name in ("status", "note", "reviewer")}
    st.session_state.setdefault(keys["status"], data.review_choice(r.status, r.close_reason))
    st.session_state.setdefault(keys["reviewer"], _default_reviewer())
    if saved := st.session_state.pop("review_saved", None):
        st.success(f"Review saved: {saved}")
    if data.read_only():
        st.info("Read-only dashboard (reachable from the network without a password): reviews are off.")
        _history(url, r.id)
        return
    with st.form(f"review_{r.id}"):
        st.selectbox("Status", data.REVIEW_CHOICES, key=keys["status"],
                     help="Open → acknowledged → in progress → closed, closed with why.")
        st.text_area("Analyst note", key=keys["note"])
        st.text_input("Reviewer", key=keys["reviewer"])
        st.form_submit_button("Save review", type="primary", on_click=_save_review, args=(url, r.id, keys))
    _history(url, r.id)


def _save_review(url: str, record_id: str, keys: dict[str, str]) -> None:
    """Runs before the page is drawn again (a callback), so the note box can be emptied here."""
    state = st.session_state
    status = state[keys["status"]]
    data.add_review(url, record_id, choice=status, note=state[keys["note"]].strip(),
                    reviewer=state[keys["reviewer"]].strip())
    state[keys["note"]] = ""
    state["review_saved"] = status


def _history(url: str, record_id: str) -> None:
    history = data.reviews(url, record_id)
    st.markdown("**Review history**")
    if not history:
        st.caption("No review yet.")
        return
    st.dataframe(pd.DataFrame([{"when": h.created_at, "from": h.old_status or "",
                                "status": data.review_choice(h.status, h.close_reason), "reviewer": h.reviewer or "",
                                "note": h.note or "", "via incident": h.incident_id or ""} for h in history]),
                 hide_index=True, width="stretch", key="review_history")


def _default_reviewer() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


render()
