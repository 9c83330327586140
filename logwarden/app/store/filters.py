"""`RecordFilter` → SQL WHERE conditions and the allowed sort keys, for queries and aggregates.

Owns: the meaning of each filter in SQL. Does not execute anything.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, String, and_, cast, false, or_, select, true

from logwarden.app.store.convert import as_utc
from logwarden.app.store.tables import ModelReview, ModelReviewRecord, Record
from logwarden.app.store.types import RecordFilter
from logwarden.errors import InputError
from logwarden.schemas import RISK_LEVELS, risk_rank

SORT_KEYS = {
    "last_ts": Record.last_ts, "first_ts": Record.first_ts, "created_at": Record.created_at,
    "updated_at": Record.updated_at, "risk": Record.risk_rank, "risk_rank": Record.risk_rank,
    "risk_score": Record.risk_score, "line_count": Record.line_count, "category": Record.category,
    "source": Record.source, "status": Record.status, "host": Record.host,
}
LIKE_ESCAPE = "\\"


def conditions(f: RecordFilter) -> list[ColumnElement[bool]]:
    found: list[ColumnElement[bool]] = []
    if f.since is not None:
        found.append(Record.last_ts >= as_utc(f.since))
    if f.until is not None:
        found.append(Record.last_ts <= as_utc(f.until))
    if f.min_risk is not None:
        found.append(Record.risk_rank >= _rank(f.min_risk))
    found += _membership(f)
    if f.technique:
        found.append(_technique_condition(f.technique.strip()))
    if f.text:
        found.append(_text_condition(f.text))
    if f.run_id is not None:
        found.append(Record.run_id == f.run_id)
    if f.pending:
        found.append(Record.id.in_(select(ModelReviewRecord.record_id).join(
            ModelReview, ModelReview.id == ModelReviewRecord.review_id).where(ModelReview.status == "pending")))
    return found


def where(f: RecordFilter) -> ColumnElement[bool]:
    return and_(true(), *conditions(f))


def sort_column(order_by: str):  # noqa: ANN201 - an ORM attribute
    try:
        return SORT_KEYS[order_by]
    except KeyError:
        raise InputError(f"Cannot sort by {order_by!r}; use one of: {', '.join(SORT_KEYS)}.") from None


def _rank(level: str) -> int:
    if level not in RISK_LEVELS:
        raise InputError(f"Unknown risk level {level!r}; use one of: {', '.join(RISK_LEVELS)}.")
    return risk_rank(level)


def _membership(f: RecordFilter) -> list[ColumnElement[bool]]:
    pairs = ((Record.category, f.categories), (Record.source, f.sources), (Record.status, f.statuses))
    # An explicitly empty selection (e.g. all boxes unticked in the UI) is "no filter", not "nothing".
    return [column.in_(list(values)) for column, values in pairs if values]


def _technique_condition(technique: str) -> ColumnElement[bool]:
    if not technique or " " in technique:
        return false()
    exact = f"% {_escape_like(technique)} %"
    sub = f"% {_escape_like(technique)}.%"
    return or_(Record.technique_ids.like(exact, escape=LIKE_ESCAPE),
               Record.technique_ids.like(sub, escape=LIKE_ESCAPE))


def _text_condition(text: str) -> ColumnElement[bool]:
    pattern = f"%{_escape_like(text)}%"
    columns = (Record.anomaly, Record.trace, Record.recommendation, cast(Record.indicators, String))
    return or_(*(column.ilike(pattern, escape=LIKE_ESCAPE) for column in columns))


def _escape_like(text: str) -> str:
    return text.replace(LIKE_ESCAPE, LIKE_ESCAPE * 2).replace("%", "\\%").replace("_", "\\_")
