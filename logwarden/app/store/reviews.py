"""Review writes shared by records and incidents: check a (status, close reason) pair, move a record
to it and append the trail row saying from what state, why and through which incident.

Owns: what a review changes on a record. Does not open connections or know incidents' own rows
(incidents.py writes those and calls `review_record` for each member).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select, update

from logwarden.app.store.tables import Record, Review
from logwarden.errors import InputError
from logwarden.schemas.record import review_error


@dataclass(frozen=True, slots=True)
class ReviewChange:
    """What one review asks: None keeps the current value (status, note); `reason` goes with closed."""

    status: str | None = None
    reason: str | None = None
    note: str | None = None
    reviewer: str | None = None

    def check(self) -> None:
        problem = review_error(self.status, self.reason)
        if problem:
            raise InputError(problem[0].upper() + problem[1:] + ".")

    def written(self, current: Any, now: datetime) -> dict[str, Any]:
        """The review columns after it, given the current row (status, close_reason, analyst_note)."""
        status = self.status or current.status
        reason = self.reason if self.status else current.close_reason
        return {"status": status, "close_reason": reason,
                "analyst_note": self.note if self.note is not None else current.analyst_note,
                "reviewer": self.reviewer, "reviewed_at": now}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def review_record(conn: Connection, record_id: str, change: ReviewChange, *, now: datetime,
                  incident_id: str | None = None) -> dict[str, Any] | None:
    """Apply `change` to the record and append its trail row; the written review (with `old_status`),
    or None when there is no such record."""
    current = conn.execute(select(Record.status, Record.close_reason, Record.analyst_note)
                           .where(Record.id == record_id)).first()
    if current is None:
        return None
    written = change.written(current, now)
    conn.execute(update(Record).where(Record.id == record_id).values(**written))
    conn.execute(insert(Review).values(record_id=record_id, old_status=current.status, status=written["status"],
                                       close_reason=written["close_reason"], note=change.note,
                                       reviewer=change.reviewer, incident_id=incident_id, created_at=now))
    return {"id": record_id, "old_status": current.status, **written}
