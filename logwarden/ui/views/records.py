"""Records page: the alert queue. Rows lead with the anomaly, host and time, coloured by level;
clicking a row opens the record; "Select several" turns clicks into a selection that one click
moves to a review state (acknowledged, in progress, or closed with its reason). Filters sit in the sidebar, under the scope, and live in the URL (a link or a reload keeps
them; the overview's charts link here with theirs). A grouped view counts records by host or by
address (until incidents land), and a click there filters the queue to it.

Sorting, filtering and paging are SQL; only one page of rows is read; the downloads page through
the whole filtered set when clicked. Knows nothing of how a record is shown in detail.
"""

from __future__ import annotations

import getpass
import hashlib
import math
from collections import Counter, defaultdict

import pandas as pd
import streamlit as st

from logwarden.app.store import RecordFilter
from logwarden.schemas import CATEGORIES, RISK_LEVELS, RiskRecord
from logwarden.schemas.record import STATUSES
from logwarden.ui import data
from logwarden.ui.scope import scoped
from logwarden.ui.style import LEVEL_TINTS
from logwarden.ui.text import shorten

SORTS = {"Risk": "risk_score", "Last event": "last_ts", "First event": "first_ts", "Host": "host",
         "Category": "category", "Source": "source", "Status": "status", "Lines": "line_count", "Stored": "created_at"}
PAGE_SIZES = (25, 50, 100, 200)
ANY = "any"
VIEWS = ("Queue", "By host", "By address")
# The bulk bar's buttons: label → review choice (data.REVIEW_CHOICES).
BULK_REVIEWS = {"Acknowledge": "acknowledged", "In progress": "in_progress",
                "Close: true positive": "closed (true_positive)", "Close: benign positive": "closed (benign_positive)",
                "Close: false positive": "closed (false_positive)", "Close: duplicate": "closed (duplicate)"}
TABLE_ROWS, ROW_PX = 25, 35  # the queue's table shows this many rows whole (Streamlit's row height, px)
GROUP_LIMIT = 5000  # records read for the grouped view (the newest of the filter)
# widget key → (URL parameter, kind); kind "list" is comma-separated
URL_STATE = {"rec_min_risk": ("risk", "one"), "rec_categories": ("category", "list"),
             "rec_statuses": ("status", "list"), "rec_host": ("host", "one"), "rec_technique": ("technique", "one"),
             "rec_text": ("q", "one"), "rec_sort": ("sort", "one"), "rec_view": ("view", "one")}


def render() -> None:
    st.title("Records")
    _state_from_url()
    url, f = data.db_url(), _filters()
    # the view and the queue's sorting share one row, so the table starts high on the screen (issue 45:
    # with the filters above it, 8 rows of a 50-row page were on screen at 1280x800)
    view_column, *sorting = st.columns((3, 2, 1, 1, 1), vertical_alignment="bottom")
    view = view_column.segmented_control("View", VIEWS, default="Queue", required=True, key="rec_view")
    _state_to_url()
    key = data.filter_key(f)
    if view == "Queue":
        _queue(url, key, sorting)
    else:
        _grouped(url, key, "hosts" if view == "By host" else "ips")


def _filters() -> RecordFilter:
    """The page's own filters, in the sidebar under the scope (the main area is the queue's)."""
    with st.sidebar:
        st.subheader("Record filters")
        min_risk = st.selectbox("Minimum risk", (ANY, *RISK_LEVELS), key="rec_min_risk")
        categories = st.multiselect("Category", CATEGORIES, key="rec_categories", placeholder="any")
        statuses = st.multiselect("Review status", STATUSES, key="rec_statuses", placeholder="any")
        host = st.text_input("Host contains", key="rec_host")
        technique = st.text_input("ATT&CK technique", key="rec_technique", placeholder="T1110 or T1110.001")
        text = st.text_input("Search anomaly, trace, recommendation, indicators", key="rec_text")
    return scoped(min_risk=None if min_risk == ANY else min_risk, categories=tuple(categories),
                  statuses=tuple(statuses), technique=technique.strip() or None, text=text.strip() or None,
                  host=host.strip() or None)


# -- filters in the URL ---------------------------------------------------------------------------


def _state_from_url() -> None:
    """A widget's first value comes from the URL (a shared link, a reload, a chart click)."""
    st.session_state.update(st.session_state.pop("rec_pending", {}))  # set by a click on the grouped view
    params = st.query_params
    for key, (name, kind) in URL_STATE.items():
        if key in st.session_state or name not in params:
            continue
        value = params[name]
        if kind == "list":
            allowed = CATEGORIES if key == "rec_categories" else STATUSES
            st.session_state[key] = [v for v in value.split(",") if v in allowed]
        elif _valid(key, value):
            st.session_state[key] = value


def _valid(key: str, value: str) -> bool:
    choices = {"rec_min_risk": (ANY, *RISK_LEVELS), "rec_sort": tuple(SORTS), "rec_view": VIEWS}.get(key)
    return choices is None or value in choices


def _state_to_url() -> None:
    """The filters as they are now, in the URL (empty ones left out)."""
    for key, (name, kind) in URL_STATE.items():
        value = st.session_state.get(key)
        text = ",".join(value) if kind == "list" and value else value if isinstance(value, str) else ""
        default = {"rec_min_risk": ANY, "rec_sort": "Risk", "rec_view": "Queue"}.get(key, "")
        if text and text != default:
            st.query_params[name] = text
        elif name in st.query_params:
            del st.query_params[name]


# -- the queue --------------------------------------------------------------------------------------


def _queue(url: str, key: data.FilterKey, columns) -> None:
    total = data.record_count(url, key)
    sort_column, desc_column, size_column, page_column = columns
    order_by, descending, size = _sorting(sort_column, desc_column, size_column)
    page = _page_picker(page_column, total, size, key)
    rows = data.record_page(url, key, order_by=order_by, descending=descending, limit=size,
                            offset=(page - 1) * size)
    bulk = st.toggle("Select several to review at once", key="rec_bulk",
                     help="Off: a click on a row opens the record. On: clicks select rows to mark together.")
    st.caption(f"{total:,} matching records · page {page} of {max(1, math.ceil(total / size))}"
               + ("" if bulk else " · click a row to open it"))
    if not rows:
        st.info("No record matches these filters.")
        return
    # One table per content: a click selects a row of the rows shown (a selection kept from other
    # rows would be dropped, and the click with it); after opening a record the next table is new.
    generation = st.session_state.setdefault("rec_table_gen", 0)
    shown = hashlib.sha256(repr((key, order_by, descending, size, page)).encode()).hexdigest()[:12]
    event = st.dataframe(styled(table(rows)), hide_index=True, width="stretch", height=_height(len(rows)),
                         key=f"records_table_{int(bulk)}_{generation}_{shown}",
                         on_select="rerun", selection_mode="multi-row" if bulk else ["single-row", "single-cell"],
                         column_config={"id": st.column_config.TextColumn("id", width="small")})
    clicked = [*event.selection.rows, *(cell[0] for cell in getattr(event.selection, "cells", []) or [])]
    picked = [rows[i] for i in dict.fromkeys(clicked) if i < len(rows)]
    if bulk:
        _bulk_review(url, picked)
    elif picked:
        st.session_state["rec_table_gen"] = generation + 1
        st.switch_page("views/record.py", query_params={"id": picked[0].id[:12]})
    _downloads(url, key, total)


def _height(rows: int) -> int:
    """Pixels for the table: up to TABLE_ROWS rows without an inner scroll bar (the page scrolls past them)."""
    return ROW_PX * (min(rows, TABLE_ROWS) + 1) + 3


def _sorting(sort_column, desc_column, size_column) -> tuple[str, bool, int]:
    sort = sort_column.selectbox("Sort by", list(SORTS), key="rec_sort")
    descending = desc_column.toggle("Descending", value=True, key="rec_desc")
    size = size_column.selectbox("Rows per page", PAGE_SIZES, index=1, key="rec_size")
    return SORTS[sort], descending, size


def _page_picker(column, total: int, size: int, key: data.FilterKey) -> int:
    pages = max(1, math.ceil(total / size))
    # A new filter starts again at page 1 (page 7 of the old result may not exist any more).
    if st.session_state.get("rec_last_key") != key or st.session_state.get("rec_page", 1) > pages:
        st.session_state["rec_page"] = 1
        st.session_state["rec_last_key"] = key
    return int(column.number_input("Page", min_value=1, max_value=pages, step=1, key="rec_page"))


def table(rows: list[RiskRecord]) -> pd.DataFrame:
    """One line per record, what an analyst scans first leading; log-derived text goes into
    cells, which render as plain text."""
    return pd.DataFrame([{
        "anomaly": shorten(r.anomaly, 140), "host": r.host or "-",
        "last event": f"{r.last_ts:%Y-%m-%d %H:%M:%S}" if r.last_ts else "-", "risk": r.risk_level,
        "status": data.review_choice(r.status, r.close_reason), "category": r.category, "source": r.source, "lines": f"{r.line_start}-{r.line_end}",
        "rules": ", ".join(r.rule_names()), "id": r.id[:12],
    } for r in rows], columns=["anomaly", "host", "last event", "risk", "status", "category", "source", "lines",
                               "rules", "id"])


def styled(frame: pd.DataFrame):
    """Each row tinted by its level (the risk cell in the level's colour)."""
    def row_style(row: pd.Series) -> list[str]:
        return [f"background-color: {LEVEL_TINTS.get(row['risk'], '')}"] * len(row)

    return frame.style.apply(row_style, axis=1)


def _bulk_review(url: str, picked: list[RiskRecord]) -> None:
    if saved := st.session_state.pop("rec_bulk_saved", None):
        st.success(saved)
    columns = st.columns(len(BULK_REVIEWS) + 1, vertical_alignment="center")
    columns[0].markdown(f"**{len(picked)} selected**")
    for column, (label, choice) in zip(columns[1:], BULK_REVIEWS.items()):
        if column.button(label, key=f"rec_mark_{choice}", disabled=not picked):
            for record in picked:
                data.add_review(url, record.id, choice=choice, note=None, reviewer=_reviewer())
            st.session_state["rec_bulk_saved"] = f"{len(picked)} record(s) marked {choice}"
            st.rerun()


def _reviewer() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def _downloads(url: str, key: data.FilterKey, total: int) -> None:
    left, right, _ = st.columns((1, 1, 3))
    left.download_button("Download CSV", lambda: data.records_csv(url, key), file_name="logwarden-records.csv",
                         mime="text/csv", on_click="ignore", disabled=not total, key="rec_csv")
    right.download_button("Download JSONL", lambda: data.records_jsonl(url, key),
                          file_name="logwarden-records.jsonl", mime="application/x-ndjson", on_click="ignore",
                          disabled=not total, key="rec_jsonl")


# -- grouped by host or address ----------------------------------------------------------------------


def _grouped(url: str, key: data.FilterKey, kind: str) -> None:
    rows = data.record_page(url, key, order_by="last_ts", descending=True, limit=GROUP_LIMIT, offset=0)
    frame = grouped_table(rows, kind)
    label = "host" if kind == "hosts" else "address"
    st.caption(f"{len(frame):,} {label}s over {len(rows):,} records · click one to see its records in the queue")
    if frame.empty:
        st.info("No record matches these filters.")
        return
    event = st.dataframe(frame, hide_index=True, width="stretch", key=f"records_grouped_{kind}",
                         on_select="rerun", selection_mode="single-row")
    if event.selection.rows:
        value = frame.iloc[event.selection.rows[0]][label]
        st.session_state["rec_pending"] = {"rec_view": "Queue", "rec_host" if kind == "hosts" else "rec_text": value}
        del st.session_state[f"records_grouped_{kind}"]
        st.rerun()


def grouped_table(rows: list[RiskRecord], kind: str) -> pd.DataFrame:
    """Per host (or address): records per level, open ones, categories, first and last event."""
    label = "host" if kind == "hosts" else "address"
    groups: dict[str, list[RiskRecord]] = defaultdict(list)
    for r in rows:
        for value in (r.hosts if kind == "hosts" else r.indicators.ips) or ["-"]:
            groups[value].append(r)
    out = []
    for value, mine in groups.items():
        levels = Counter(r.risk_level for r in mine)
        times = sorted(t for r in mine for t in (r.first_ts, r.last_ts) if t)
        out.append({label: value, "records": len(mine), **{lvl: levels[lvl] for lvl in reversed(RISK_LEVELS)},
                    "open": sum(r.status == "open" for r in mine),
                    "categories": ", ".join(c for c, _ in Counter(r.category for r in mine).most_common(3)),
                    "first event": f"{times[0]:%Y-%m-%d %H:%M}" if times else "-",
                    "last event": f"{times[-1]:%Y-%m-%d %H:%M}" if times else "-"})
    frame = pd.DataFrame(out, columns=[label, "records", *reversed(RISK_LEVELS), "open", "categories",
                                       "first event", "last event"])
    return frame.sort_values(["critical", "high", "records"], ascending=False).reset_index(drop=True)


render()
