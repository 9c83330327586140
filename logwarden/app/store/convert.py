"""`RiskRecord` ⇄ `records` row dicts, and row → the store's small dataclasses.

Owns: which record fields are columns, which are JSON, which are derived (`risk_rank`,
`technique_ids`) and which belong to the reviewer (kept on re-analysis). Does not run SQL.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from logwarden.app.store.tables import to_utc
from logwarden.app.store.types import ErrorInfo, ReviewInfo, RunInfo, SourceState, WindowRow
from logwarden.schemas import RiskRecord, risk_rank

DATETIME_FIELDS = ("first_ts", "last_ts", "created_at", "reviewed_at")
DERIVED_COLUMNS = ("risk_rank", "technique_ids", "updated_at")
# Owned by the analyst's reviews: re-analysing the same lines must not reset them.
REVIEW_COLUMNS = ("status", "close_reason", "analyst_note", "reviewer", "reviewed_at")
KEEP_ON_UPDATE = (*REVIEW_COLUMNS, "id", "created_at")


def technique_ids_text(techniques: list[dict[str, Any]]) -> str:
    """Space-delimited with a leading and trailing space so `LIKE '% T1110 %'` matches whole ids."""
    return " " + " ".join(t["id"] for t in techniques) + " " if techniques else ""


def record_to_row(record: RiskRecord, *, now: datetime) -> dict[str, Any]:
    # One JSON-mode dump keeps nested values JSON-safe (e.g. datetimes inside engine_stats);
    # the top-level datetimes go back in as objects for the UTCDateTime columns.
    row = record.model_dump(mode="json", exclude={"rule_titles"})  # the store's, by rule (`rule_titles`)
    row.update({name: getattr(record, name) for name in DATETIME_FIELDS})
    row["risk_rank"] = risk_rank(record.risk_level)
    row["technique_ids"] = technique_ids_text(row["techniques"])
    row["updated_at"] = now
    return row


def row_to_record(row: Mapping[str, Any]) -> RiskRecord:
    data = {key: value for key, value in row.items() if key not in DERIVED_COLUMNS}
    return RiskRecord.model_validate(data)


def evidence_rows(record: RiskRecord) -> list[dict[str, Any]]:
    return [{"record_id": record.id, "line_no": line.line_no, "text": line.text}
            for line in record.evidence.exemplars]


def window_to_row(window: WindowRow, *, now: datetime) -> dict[str, Any]:
    return {"source": window.source, "inode": window.inode, "generation": window.generation,
            "line_start": window.line_start, "line_end": window.line_end, "line_count": window.line_count,
            "verdict": window.verdict, "record_ids": list(window.record_ids), "run_id": window.run_id,
            "created_at": now}


def row_to_window(row: Mapping[str, Any]) -> WindowRow:
    return WindowRow(source=row["source"], inode=row["inode"], line_start=row["line_start"],
                     line_end=row["line_end"], line_count=row["line_count"], verdict=row["verdict"],
                     record_ids=list(row["record_ids"]), run_id=row["run_id"], generation=row["generation"])


def row_to_source(row: Mapping[str, Any]) -> SourceState:
    return SourceState(**{name: row[name] for name in SourceState.__slots__})


def row_to_run(row: Mapping[str, Any]) -> RunInfo:
    return RunInfo(**{name: row[name] for name in RunInfo.__slots__})


def row_to_error(row: Mapping[str, Any]) -> ErrorInfo:
    return ErrorInfo(**{name: row[name] for name in ErrorInfo.__slots__})


def row_to_review(row: Mapping[str, Any]) -> ReviewInfo:
    return ReviewInfo(**{name: row[name] for name in ReviewInfo.__slots__})


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def as_utc(value: datetime | None) -> datetime | None:
    return None if value is None else to_utc(value)
