"""The incidents' rows: `Incident` ⇄ `incidents` + `incident_records`, the review trail, and the
queries the CLI, the UI, the exports and the grouping need.

Owns: how incidents are written (one transaction replaces a set of incidents by their regrouped
successors), read (by id or unique prefix, by filter), and reviewed. Does not know how records are
grouped or how stories are written (app/incidents).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Text, cast, delete, func, insert, select, text, update

from logwarden.app.store.convert import row_to_record, utc_now
from logwarden.app.store.reviews import ReviewChange, review_record
from logwarden.app.store.tables import IncidentMember, IncidentReview, IncidentRow, Record
from logwarden.errors import InputError
from logwarden.schemas import RiskRecord, risk_rank
from logwarden.schemas.incident import Incident

CHUNK = 500
GROUPING_LOCK = 0x6C77696E  # "lwin": PostgreSQL advisory lock id that serialises regroupings


@dataclass(frozen=True, slots=True)
class IncidentFilter:
    min_risk: str | None = None
    statuses: tuple[str, ...] = ()
    host: str | None = None
    since: datetime | None = None


Opener = Callable[[], AbstractContextManager[Connection]]


class IncidentStore:
    """The incidents of one `Store` (`store.incidents`): given its read and write transactions."""

    def __init__(self, *, read: Opener, write: Opener, connect: Opener, dialect: str) -> None:
        self._read, self._write, self._connect, self._dialect = read, write, connect, dialect

    @contextmanager
    def grouping_lock(self) -> Iterator[None]:
        """One regrouping at a time across processes (several watchers writing one PostgreSQL store
        would otherwise write the same incident ids at once): a session advisory lock held from the
        first read to the last write. SQLite serialises writers already."""
        if self._dialect != "postgresql":
            yield
            return
        with self._connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": GROUPING_LOCK})
            conn.commit()
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": GROUPING_LOCK})
                conn.commit()

    # -- reads -----------------------------------------------------------------------------------

    def get(self, incident_id: str) -> Incident | None:
        """The incident with this id or unique id prefix (with or without `inc-`); None when none."""
        found = self.resolve_id(incident_id)
        if found is None:
            return None
        with self._read() as conn:
            row = conn.execute(select(IncidentRow.__table__).where(IncidentRow.id == found)).mappings().first()
            return _row_to_incident(row, _member_ids(conn, [found])[found]) if row else None

    def get_many(self, incident_ids: Sequence[str]) -> dict[str, Incident]:
        """The incidents with these exact ids (those that exist), a few queries per 500 of them."""
        found: dict[str, Incident] = {}
        with self._read() as conn:
            for start in range(0, len(incident_ids), CHUNK):
                chunk = list(incident_ids[start:start + CHUNK])
                rows = conn.execute(select(IncidentRow.__table__).where(IncidentRow.id.in_(chunk))).mappings().all()
                members = _member_ids(conn, [r["id"] for r in rows])
                found.update((r["id"], _row_to_incident(r, members[r["id"]])) for r in rows)
        return {i: found[i] for i in incident_ids if i in found}

    def spans(self, incident_ids: Sequence[str]) -> dict[str, tuple[datetime | None, datetime | None]]:
        """id → (first_ts, last_ts) of the incidents with these ids."""
        found: dict[str, tuple[datetime | None, datetime | None]] = {}
        with self._read() as conn:
            for start in range(0, len(incident_ids), CHUNK):
                stmt = select(IncidentRow.id, IncidentRow.first_ts, IncidentRow.last_ts).where(
                    IncidentRow.id.in_(incident_ids[start:start + CHUNK]))
                found.update((i, (first, last)) for i, first, last in conn.execute(stmt))
        return found

    def resolve_id(self, prefix: str) -> str | None:
        prefix = prefix.strip()
        if not prefix:
            return None
        candidates = {prefix, prefix if prefix.startswith("inc-") else "inc-" + prefix}
        with self._read() as conn:
            ids = sorted({i for p in candidates for i in conn.execute(
                select(IncidentRow.id).where(IncidentRow.id.startswith(p, autoescape=True)).limit(3)).scalars()})
        exact = [i for i in ids if i in candidates]
        if exact or len(ids) == 1:
            return (exact or ids)[0]
        if ids:
            raise InputError(f"The id prefix {prefix!r} matches several incidents ({', '.join(ids[:3])}); "
                             "give more of the id.")
        return None

    def query(self, filters: IncidentFilter | None = None, *, limit: int = 100, offset: int = 0) -> list[Incident]:
        """Riskiest first, then newest (the id breaks ties: pages never overlap)."""
        stmt = select(IncidentRow.__table__).where(*_where(filters or IncidentFilter()))
        stmt = (stmt.order_by(IncidentRow.risk_rank.desc(), IncidentRow.last_ts.desc(), IncidentRow.id)
                .limit(limit).offset(offset))
        with self._read() as conn:
            rows = list(conn.execute(stmt).mappings())
            members = _member_ids(conn, [r["id"] for r in rows])
        return [_row_to_incident(r, members[r["id"]]) for r in rows]

    def count(self, filters: IncidentFilter | None = None) -> int:
        with self._read() as conn:
            return conn.scalar(select(func.count()).select_from(IncidentRow).where(*_where(filters or IncidentFilter())))

    def members(self, incident_id: str) -> list[RiskRecord]:
        """The incident's records in time order."""
        stmt = (select(Record.__table__).join(IncidentMember, IncidentMember.record_id == Record.id)
                .where(IncidentMember.incident_id == incident_id).order_by(Record.first_ts, Record.id))
        with self._read() as conn:
            return [row_to_record(r) for r in conn.execute(stmt).mappings()]

    def of_records(self, record_ids: Iterable[str]) -> dict[str, str]:
        """record id → the id of the incident it belongs to (records in none are left out)."""
        ids, found = list(record_ids), {}
        with self._read() as conn:
            for start in range(0, len(ids), CHUNK):
                stmt = select(IncidentMember.record_id, IncidentMember.incident_id).where(
                    IncidentMember.record_id.in_(ids[start:start + CHUNK]))
                found.update(dict(conn.execute(stmt).all()))
        return found

    def reviews(self, incident_id: str) -> list[dict[str, Any]]:
        stmt = select(IncidentReview.__table__).where(IncidentReview.incident_id == incident_id).order_by(
            IncidentReview.id)
        with self._read() as conn:
            return [dict(r) for r in conn.execute(stmt).mappings()]

    # -- writes ----------------------------------------------------------------------------------

    def replace(self, *, old: Sequence[str], incidents: Sequence[Incident]) -> None:
        """In one transaction: drop the incidents `old` (their regrouping's input) and write `incidents`
        (its output, with their members)."""
        now = utc_now()
        gone = sorted({*old, *(i.id for i in incidents)})
        links = [{"record_id": r, "incident_id": i.id} for i in incidents for r in i.record_ids]
        members = [link["record_id"] for link in links]
        with self._write() as conn:
            for start in range(0, len(gone), CHUNK):
                conn.execute(delete(IncidentRow).where(IncidentRow.id.in_(gone[start:start + CHUNK])))
                conn.execute(delete(IncidentMember).where(IncidentMember.incident_id.in_(gone[start:start + CHUNK])))
            for start in range(0, len(members), CHUNK):  # a record moved from an incident not replaced
                conn.execute(delete(IncidentMember).where(IncidentMember.record_id.in_(members[start:start + CHUNK])))
            for start in range(0, len(incidents), CHUNK):  # executemany: one statement per chunk, not per incident
                chunk = incidents[start:start + CHUNK]
                conn.execute(insert(IncidentRow), [_row_of(i, now) for i in chunk])
            for start in range(0, len(links), CHUNK * 10):
                conn.execute(insert(IncidentMember), links[start:start + CHUNK * 10])

    def set_story(self, incident: Incident) -> bool:
        """Store a (re)written story; the review fields stay as they are. An incident not stored yet (a
        lone record's, which its story makes an incident: app/incidents/regroup.py) is written whole,
        unless a record of it joined an incident meanwhile. False when nothing was stored."""
        fields = ("title", "summary", "stages", "next_steps", "cited", "story_by", "story_key", "model",
                  "ungrounded", "invented", "rejected")
        values = {name: getattr(incident, name) for name in fields}
        with self._write() as conn:
            updated = conn.execute(update(IncidentRow).where(IncidentRow.id == incident.id).values(
                **values, updated_at=utc_now())).rowcount
            if updated:
                return True
            taken = conn.execute(select(IncidentMember.record_id).where(
                IncidentMember.record_id.in_(incident.record_ids)).limit(1)).first()
            if taken is not None:
                return False
            conn.execute(insert(IncidentRow), [_row_of(incident, utc_now())])
            conn.execute(insert(IncidentMember), [{"record_id": r, "incident_id": incident.id}
                                                  for r in incident.record_ids])
        return True

    def review(self, incident_id: str, *, status: str | None = None, reason: str | None = None,
               owner: str | None = None, note: str | None = None, reviewer: str | None = None) -> dict[str, Any]:
        """Append to the trail and make it the incident's state (closed with a `reason`), owner and
        note; None keeps each. A new state goes to every member record too, each record's trail row
        naming this incident. Returns the incident's review and `records`, how many members changed."""
        change = ReviewChange(status=status, reason=reason, note=note, reviewer=reviewer)
        change.check()
        found = self.resolve_id(incident_id) or incident_id
        now = utc_now()
        with self._write() as conn:
            row = conn.execute(select(IncidentRow.status, IncidentRow.close_reason, IncidentRow.analyst_note,
                                      IncidentRow.owner).where(IncidentRow.id == found)).first()
            if row is None:
                raise InputError(f"No incident {incident_id!r}; list them with `logwarden incidents list`.")
            written = {**change.written(row, now), "owner": owner if owner is not None else row.owner}
            conn.execute(update(IncidentRow).where(IncidentRow.id == found).values(**written, updated_at=now))
            conn.execute(insert(IncidentReview).values(
                incident_id=found, old_status=row.status, status=written["status"],
                close_reason=written["close_reason"], owner=written["owner"], note=note, reviewer=reviewer,
                created_at=now))
            members = _member_ids(conn, [found])[found] if status else []
            for record_id in members:
                review_record(conn, record_id, change, now=now, incident_id=found)
        return {"id": found, "old_status": row.status, **written, "records": len(members)}


def _row_of(incident: Incident, now: datetime) -> dict[str, Any]:
    row = incident.model_dump(exclude={"record_ids"})
    row.update(risk_rank=risk_rank(incident.risk_level), record_count=len(incident.record_ids),
               created_at=now, updated_at=now)
    return row


def _member_ids(conn: Connection, incident_ids: Sequence[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {i: [] for i in incident_ids}
    for start in range(0, len(incident_ids), CHUNK):
        stmt = (select(IncidentMember.incident_id, IncidentMember.record_id)
                .join(Record, Record.id == IncidentMember.record_id)
                .where(IncidentMember.incident_id.in_(incident_ids[start:start + CHUNK]))
                .order_by(Record.first_ts, Record.id))
        for incident, record in conn.execute(stmt):
            found[incident].append(record)
    return found


def _row_to_incident(row: Mapping[str, Any], record_ids: list[str]) -> Incident:
    data = {k: v for k, v in row.items() if k not in ("risk_rank", "record_count", "created_at", "updated_at")}
    return Incident.model_validate({**data, "record_ids": record_ids})


def _where(f: IncidentFilter) -> list[Any]:
    clauses = []
    if f.min_risk:
        clauses.append(IncidentRow.risk_rank >= risk_rank(f.min_risk))
    if f.statuses:
        clauses.append(IncidentRow.status.in_(f.statuses))
    if f.since is not None:
        clauses.append(IncidentRow.last_ts >= f.since)
    if f.host:
        clauses.append(func.lower(cast(IncidentRow.hosts, Text)).contains(f.host.lower(), autoescape=True))
    return clauses
