"""Dashboard aggregates over filtered records, computed in SQL.

SQLite gets `strftime` buckets and `json_each` over the JSON list columns, PostgreSQL `date_trunc`
and `json_array_elements`; both GROUP BY in SQL. Any other dialect gets a Python fallback over
the filtered rows, which is correct but reads every matching row.

Owns: the aggregate queries. Does not know about transactions, the UI or charts.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from typing import Any, NamedTuple

from sqlalchemy import JSON, Connection, column, func, select, true

from logwarden.app.store.filters import where
from logwarden.app.store.tables import Record, Run, Source, WindowResult
from logwarden.app.store.types import RecordFilter
from logwarden.errors import InputError
from logwarden.schemas import CATEGORIES, RISK_LEVELS, Indicators
from logwarden.schemas.record import OPEN_STATUSES

INDICATOR_KINDS = tuple(Indicators.model_fields)
BUCKET_FORMATS = {"hour": "%Y-%m-%d %H:00:00", "day": "%Y-%m-%d 00:00:00"}


class TimeCount(NamedTuple):
    bucket: datetime  # start of the hour/day, UTC
    level: str
    count: int


class IndicatorCount(NamedTuple):
    value: str
    count: int


class TechniqueCount(NamedTuple):
    technique: str
    tactic: str
    count: int


def counts_by_level(conn: Connection, f: RecordFilter) -> dict[str, int]:
    """Every level, in ascending order, zero when absent (stable chart axes)."""
    rows = conn.execute(select(Record.risk_level, func.count()).where(where(f)).group_by(Record.risk_level))
    found = dict(rows.all())
    return {level: found.get(level, 0) for level in RISK_LEVELS}


def counts_by_category(conn: Connection, f: RecordFilter) -> dict[str, int]:
    """Categories present, most frequent first (ties in CATEGORIES order)."""
    rows = conn.execute(select(Record.category, func.count()).where(where(f)).group_by(Record.category))
    found = dict(rows.all())
    return dict(sorted(found.items(), key=lambda kv: (-kv[1], _category_order(kv[0]))))


def risk_over_time(conn: Connection, f: RecordFilter, *, bucket: str = "hour") -> list[TimeCount]:
    if bucket not in BUCKET_FORMATS:
        raise InputError(f"Unknown time bucket {bucket!r}; use 'hour' or 'day'.")
    dialect = _bucket_dialect(conn)
    if dialect == "sqlite":
        return _sql_buckets(conn, f, func.strftime(BUCKET_FORMATS[bucket], Record.last_ts))
    if dialect == "postgresql":
        return _sql_buckets(conn, f, func.date_trunc(bucket, Record.last_ts))
    return _python_buckets(conn, f, bucket)


def top_indicators(conn: Connection, f: RecordFilter, *, kind: str = "ips", limit: int = 10) -> list[IndicatorCount]:
    """How many filtered records mention each indicator value (a record counts a value once)."""
    if kind not in INDICATOR_KINDS:
        raise InputError(f"Unknown indicator kind {kind!r}; use one of: {', '.join(INDICATOR_KINDS)}.")
    if not _has_json_each(conn):
        counts = Counter(v for ind in _column_values(conn, f, Record.indicators) for v in set(ind.get(kind, [])))
        return [IndicatorCount(v, n) for v, n in _top(counts, limit)]
    if conn.dialect.name == "postgresql":
        each = func.json_array_elements_text(Record.indicators.op("->")(kind)).table_valued("value")
    else:
        each = func.json_each(Record.indicators, f"$.{kind}").table_valued("value")
    each = each.alias("each_value")
    count = func.count(func.distinct(Record.id))
    stmt = (select(each.c.value, count).select_from(Record).join(each, true()).where(where(f))
            .group_by(each.c.value).order_by(count.desc(), each.c.value).limit(limit))
    return [IndicatorCount(str(v), n) for v, n in conn.execute(stmt)]


def technique_counts(conn: Connection, f: RecordFilter) -> list[TechniqueCount]:
    """(technique id, tactic, number of records), most frequent first."""
    if not _has_json_each(conn):
        counts = Counter((t["id"], t.get("tactic", "")) for ts in _column_values(conn, f, Record.techniques)
                         for t in ts)
        return [TechniqueCount(tid, tactic, n) for (tid, tactic), n in _top(counts, None)]
    if conn.dialect.name == "postgresql":
        each = func.json_array_elements(Record.techniques).table_valued(column("value", JSON)).alias("each_technique")
        tid, tactic = each.c.value.op("->>")("id"), each.c.value.op("->>")("tactic")
    else:
        each = func.json_each(Record.techniques).table_valued("value").alias("each_technique")
        tid, tactic = func.json_extract(each.c.value, "$.id"), func.json_extract(each.c.value, "$.tactic")
    count = func.count()
    stmt = (select(tid, tactic, count).select_from(Record).join(each, true()).where(where(f))
            .group_by(tid, tactic).order_by(count.desc(), tid))
    return [TechniqueCount(t, tac or "", n) for t, tac, n in conn.execute(stmt)]


def last_event_span(conn: Connection, f: RecordFilter) -> tuple[datetime | None, datetime | None]:
    """The earliest and latest `last_ts` of the filtered records (what --since/--until compare), UTC."""
    column_type = Record.__table__.c.last_ts.type
    stmt = select(func.min(Record.last_ts, type_=column_type), func.max(Record.last_ts, type_=column_type))
    first, last = conn.execute(stmt.where(where(f))).one()  # UTCDateTime hands them back aware
    return first, last


def kpis(conn: Connection, f: RecordFilter) -> dict[str, Any]:
    by_level = counts_by_level(conn, f)
    open_high = select(func.count()).where(where(f), Record.risk_level.in_(("high", "critical")),
                                           Record.status.in_(OPEN_STATUSES))
    record_sources = select(func.count(func.distinct(Record.source))).where(where(f))
    return {
        "records": sum(by_level.values()),
        "records_by_risk": by_level,
        "open_high_critical": conn.scalar(open_high),
        "sources": conn.scalar(record_sources),
        "tracked_sources": conn.scalar(select(func.count()).select_from(Source)),
        "lines_analysed": _lines_analysed(conn, f),
        "last_run": _last_run(conn),
    }


def _has_json_each(conn: Connection) -> bool:
    """SQLite's json_each or PostgreSQL's json_array_elements: the JSON lists unnest in SQL."""
    return conn.dialect.name in ("sqlite", "postgresql")


def _lines_analysed(conn: Connection, f: RecordFilter) -> int:
    """Lines in analysed windows (benign included); windows carry only source and run filters."""
    stmt = select(func.coalesce(func.sum(WindowResult.line_count), 0))
    if f.sources:
        stmt = stmt.where(WindowResult.source.in_(list(f.sources)))
    if f.run_id is not None:
        stmt = stmt.where(WindowResult.run_id == f.run_id)
    return int(conn.scalar(stmt) or 0)


def _last_run(conn: Connection) -> dict[str, Any] | None:
    stmt = select(Run.id, Run.command, Run.status, Run.started_at, Run.finished_at)
    row = conn.execute(stmt.order_by(Run.started_at.desc()).limit(1)).mappings().first()
    return dict(row) if row else None


def _bucket_dialect(conn: Connection) -> str:
    return conn.dialect.name


def _sql_buckets(conn: Connection, f: RecordFilter, bucket_expr: Any) -> list[TimeCount]:
    bucket = bucket_expr.label("bucket")
    stmt = (select(bucket, Record.risk_level, func.count()).where(where(f), Record.last_ts.is_not(None))
            .group_by(bucket, Record.risk_level, Record.risk_rank).order_by(bucket, Record.risk_rank))
    return [TimeCount(_as_bucket_time(b), level, n) for b, level, n in conn.execute(stmt)]


def _python_buckets(conn: Connection, f: RecordFilter, bucket: str) -> list[TimeCount]:
    stmt = select(Record.last_ts, Record.risk_level).where(where(f), Record.last_ts.is_not(None))
    counts = Counter((_truncate(ts, bucket), level) for ts, level in conn.execute(stmt))
    return [TimeCount(b, level, n) for (b, level), n in
            sorted(counts.items(), key=lambda kv: (kv[0][0], RISK_LEVELS.index(kv[0][1])))]


def _truncate(ts: datetime, bucket: str) -> datetime:
    hour = ts.hour if bucket == "hour" else 0
    return ts.replace(hour=hour, minute=0, second=0, microsecond=0)


def _as_bucket_time(value: str | datetime) -> datetime:
    parsed = datetime.fromisoformat(value) if isinstance(value, str) else value
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed


def _column_values(conn: Connection, f: RecordFilter, column: Any) -> list[Any]:
    return [value for value in conn.execute(select(column).where(where(f))).scalars() if value]


def _top(counts: Counter, limit: int | None) -> list[tuple[Any, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]


def _category_order(category: str) -> int:
    return CATEGORIES.index(category) if category in CATEGORIES else len(CATEGORIES)
