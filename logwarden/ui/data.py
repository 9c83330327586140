"""Everything the pages read or write, through `logwarden.app.store` only, with short-lived caching.

Aggregates and record pages are cached for `TTL_S` seconds keyed on the database URL and a
hashable form of the filter, so the reruns that every widget click causes do not query SQLite
again; writes clear the cache so the analyst sees their own change at once. Per-record reads
(detail, review history) are primary-key lookups and are never cached.

Knows nothing of page layout or widgets.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import fields
from typing import Any

import streamlit as st

from logwarden.app.backends import facts_line, model_facts, record_model_facts
from logwarden.app.config import Settings
from logwarden.app.store import (
    ErrorInfo,
    FeedbackInfo,
    IndicatorCount,
    RecordFilter,
    ReviewInfo,
    RunInfo,
    SourceState,
    Store,
    TechniqueCount,
    TimeCount,
    open_store,
)
from logwarden.errors import ConfigError
from logwarden.schemas import RiskRecord
from logwarden.schemas.record import CLOSE_REASONS, STATUSES
from logwarden.ui.text import csv_safe

TTL_S = 30
EXPORT_PAGE = 1000
FilterKey = tuple[tuple[str, Any], ...]
CSV_COLUMNS = ("id", "source", "host", "line_start", "line_end", "first_ts", "last_ts", "risk_level",
               "risk_score", "category", "techniques", "ips", "users", "hosts", "anomaly", "trace",
               "recommendation", "detections", "decided_by", "model", "status", "analyst_note")


def db_url() -> str:
    """The store URL: `LOGWARDEN_DB` (set by `logwarden ui --db`) or the settings' default.
    Read fresh, not from the cached settings, so one process can serve different stores in tests."""
    return Settings().db_url


def read_only() -> bool:
    """Is this dashboard read-only (`LOGWARDEN_UI_READ_ONLY`: `logwarden ui` on a non-loopback address
    without a password)? Then the store is opened read-only and nothing offers to write."""
    return Settings().ui_read_only


@st.cache_resource(show_spinner=False)
def store_for(url: str) -> Store:
    return open_store(url, readonly=read_only(), create=False)


def _writable() -> None:
    if read_only():
        raise ConfigError("this dashboard is read-only (it is reachable from the network without a password): "
                          "set LOGWARDEN_UI_PASSWORD where `logwarden ui` runs to allow reviews")


def filter_key(f: RecordFilter) -> FilterKey:
    """A hashable, order-stable form of a filter (st.cache_data keys on it)."""
    return tuple((field.name, _frozen(getattr(f, field.name))) for field in fields(RecordFilter))


def filter_from(key: FilterKey) -> RecordFilter:
    return RecordFilter(**dict(key))


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, (list, tuple, set, frozenset)) else value


# Overview aggregates are cached one by one, so that switching e.g. the "top" chart from IPs to
# users costs one query, not all of them.

@st.cache_data(ttl=TTL_S, show_spinner=False)
def kpis(url: str, key: FilterKey) -> dict[str, Any]:
    return store_for(url).kpis(filter_from(key))


@st.cache_data(ttl=TTL_S, show_spinner=False)
def categories(url: str, key: FilterKey) -> dict[str, int]:
    return store_for(url).counts_by_category(filter_from(key))


@st.cache_data(ttl=TTL_S, show_spinner=False)
def risk_over_time(url: str, key: FilterKey) -> list[TimeCount]:
    """Hourly counts; the page rolls them up into days when the range is long."""
    return store_for(url).risk_over_time(filter_from(key), bucket="hour")


@st.cache_data(ttl=TTL_S, show_spinner=False)
def top_indicators(url: str, key: FilterKey, kind: str, limit: int = 10) -> list[IndicatorCount]:
    return store_for(url).top_indicators(filter_from(key), kind=kind, limit=limit)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def techniques(url: str, key: FilterKey) -> list[TechniqueCount]:
    return store_for(url).technique_counts(filter_from(key))


@st.cache_data(ttl=TTL_S, show_spinner=False)
def record_page(url: str, key: FilterKey, *, order_by: str, descending: bool, limit: int,
                offset: int) -> list[RiskRecord]:
    return store_for(url).query_records(filter_from(key), order_by=order_by, descending=descending,
                                        limit=limit, offset=offset)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def record_count(url: str, key: FilterKey) -> int:
    return store_for(url).count_records(filter_from(key))


@st.cache_data(ttl=TTL_S, show_spinner=False)
def source_paths(url: str) -> list[str]:
    return sorted({s.path for s in store_for(url).list_sources()})


@st.cache_data(ttl=TTL_S, show_spinner=False)
def sources(url: str) -> list[SourceState]:
    return store_for(url).list_sources()


@st.cache_data(ttl=TTL_S, show_spinner=False)
def runs(url: str, limit: int = 50) -> list[RunInfo]:
    return store_for(url).list_runs(limit=limit)


@st.cache_data(ttl=TTL_S, show_spinner=False)
def errors(url: str, limit: int = 200) -> list[ErrorInfo]:
    return store_for(url).list_errors(limit=limit)


def record(url: str, record_id: str) -> RiskRecord | None:
    return store_for(url).get_record(record_id)


def model_facts_of(url: str, r: RiskRecord) -> dict[str, str | None]:
    """Which model made the record (name, quantisation, adapter or why none), from its run."""
    run = store_for(url).get_run(r.run_id) if r.run_id else None
    return record_model_facts(r, run.config if run else None)


def model_line(facts: dict[str, str | None]) -> str:
    """The facts as one line: 'model embedded (q4_0), adapter none: …'."""
    return facts_line(facts)


def engine_line(engine) -> str:
    """Which model the triage page runs (None: the rules alone)."""
    return facts_line(model_facts(engine))


def reviews(url: str, record_id: str) -> list[ReviewInfo]:
    return store_for(url).list_reviews(record_id)


# What a review form or button offers: the open states, and closed with each reason (one pick is
# always a valid pair).
REVIEW_CHOICES = (*(s for s in STATUSES if s != "closed"), *(f"closed ({reason})" for reason in CLOSE_REASONS))


def review_choice(status: str, reason: str | None) -> str:
    """The choice showing a record's or incident's state: `closed (false_positive)`, `open`."""
    return f"{status} ({reason})" if reason else status


def parse_choice(choice: str) -> tuple[str, str | None]:
    status, _, reason = choice.partition(" (")
    return status, reason.rstrip(")") or None


def add_review(url: str, record_id: str, *, choice: str | None, note: str | None, reviewer: str | None) -> None:
    """`choice` one of `REVIEW_CHOICES` (None keeps the state)."""
    _writable()
    status, reason = parse_choice(choice) if choice else (None, None)
    store_for(url).add_review(record_id, status=status, reason=reason, note=note or None, reviewer=reviewer or None)
    st.cache_data.clear()  # counts by status and the records table changed


def add_feedback(url: str, kind: str, target_id: str, *, verdict: str, reason: str | None, note: str | None,
                 reviewer: str | None) -> FeedbackInfo:
    """Accept or reject the model's judgement (app/store/feedback.py); an InputError says why not."""
    _writable()
    return store_for(url).add_feedback(kind, target_id, verdict=verdict, reason=reason, note=note, reviewer=reviewer)


def feedback(url: str, kind: str, target_id: str) -> list[FeedbackInfo]:
    return store_for(url).list_feedback(kind, target_id)


def triage_answer(url: str, *, snippet: str, answer: str, verdict: str, model: str | None,
                  record_ids: list[str]) -> str:
    """Keep the model's answer to a snippet (the first time it is judged); its id."""
    _writable()
    return store_for(url).add_triage_answer(snippet=snippet, answer=answer, verdict=verdict, model=model,
                                            record_ids=record_ids)


def accept_deviation(url: str, ref: str) -> str:
    """A deviation joins the baseline (as `logwarden baseline accept REF`); returns what was accepted."""
    from logwarden.app.baseline import Baseline

    store = store_for(url)
    baseline = Baseline(store, mode="judge")
    accepted = baseline.accept(ref)
    with store.transaction() as tx:
        baseline.flush(tx)
    return accepted


def mute_deviation(url: str, ref: str) -> None:
    store_for(url).mute(ref, note="muted from the record page")


def store_records(url: str, records: list[RiskRecord]) -> int:
    _writable()
    written = store_for(url).upsert_records(records)
    st.cache_data.clear()
    return written


def iter_filtered(url: str, key: FilterKey) -> Iterator[RiskRecord]:
    """Every record of the filter, oldest first, read page by page (never the whole table at once)."""
    store, f, offset = store_for(url), filter_from(key), 0
    while page := store.query_records(f, order_by="last_ts", descending=False, limit=EXPORT_PAGE, offset=offset):
        yield from page
        offset += len(page)


def records_jsonl(url: str, key: FilterKey) -> str:
    return "".join(r.model_dump_json() + "\n" for r in iter_filtered(url, key))


def records_csv(url: str, key: FilterKey) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for r in iter_filtered(url, key):
        writer.writerow([csv_safe(str(value)) for value in csv_row(r)])
    return buffer.getvalue()


def csv_row(r: RiskRecord) -> list[Any]:
    ind = r.indicators
    return [r.id, r.source, r.host or "", r.line_start, r.line_end, r.first_ts or "", r.last_ts or "",
            r.risk_level, r.risk_score, r.category, " ".join(t.id for t in r.techniques), " ".join(ind.ips),
            " ".join(ind.users), " ".join(ind.hosts), r.anomaly, r.trace, r.recommendation,
            " ".join(r.detections), r.decided_by, r.model or "", r.status, r.analyst_note or ""]


def export_text(url: str, key: FilterKey, fmt: str) -> str:
    """The filtered records in one of the SIEM formats of `logwarden.app.export`, one per line."""
    from logwarden.app.export import export_records

    return "".join(line + "\n" for line in export_records(iter_filtered(url, key), fmt))


# -- incidents (never cached: a handful of primary-key and indexed reads) ----------------------------

def incidents(url: str, *, min_risk: str | None = None, statuses: tuple[str, ...] = (), limit: int = 500,
              offset: int = 0):
    from logwarden.app.store import IncidentFilter

    return store_for(url).incidents.query(IncidentFilter(min_risk=min_risk, statuses=statuses), limit=limit,
                                          offset=offset)


def incident_count(url: str, *, min_risk: str | None = None, statuses: tuple[str, ...] = ()) -> int:
    from logwarden.app.store import IncidentFilter

    return store_for(url).incidents.count(IncidentFilter(min_risk=min_risk, statuses=statuses))


def incident(url: str, incident_id: str):
    return store_for(url).incidents.get(incident_id)


def incident_members(url: str, incident_id: str) -> list[RiskRecord]:
    return store_for(url).incidents.members(incident_id)


def incident_reviews(url: str, incident_id: str) -> list[dict[str, Any]]:
    return store_for(url).incidents.reviews(incident_id)


def review_incident(url: str, incident_id: str, *, choice: str, owner: str | None, note: str | None,
                    reviewer: str | None) -> int:
    """The incident's review, which a new state takes to its records; returns how many changed."""
    _writable()
    status, reason = parse_choice(choice)
    written = store_for(url).incidents.review(incident_id, status=status, reason=reason, owner=owner or None,
                                              note=note or None, reviewer=reviewer or None)
    st.cache_data.clear()  # its records' states changed too
    return int(written["records"])


def incident_of(url: str, record_id: str):
    """The incident a record belongs to, or None."""
    store = store_for(url)
    found = store.incidents.of_records([record_id]).get(record_id)
    return store.incidents.get(found) if found else None
