"""The write operations of one transaction (`Transaction`), all idempotent where re-analysis can
repeat them: records upsert by id, windows by (source, inode, generation, line span), sources by
(path, inode, generation), watched folders by path.

Owns: how rows are written (dialect upserts — `INSERT … ON CONFLICT` on SQLite and PostgreSQL —,
the generic fallback, child rows of evidence, and the NUL characters PostgreSQL's text refuses), and
a part of a transaction the database may refuse on its own (`attempt`: a savepoint).
Does not open or commit transactions — the caller's `Connection` is already inside one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Table, and_, delete, func, insert, select, text, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DataError, IntegrityError

from logwarden.app.events import ErrorRow
from logwarden.app.safetext import clean
from logwarden.app.store.convert import KEEP_ON_UPDATE, evidence_rows, record_to_row, utc_now, window_to_row
from logwarden.app.store.tables import (
    BaselineProfile,
    ErrorEntry,
    EvidenceLine,
    ModelReview,
    ModelReviewRecord,
    Record,
    RuleTitle,
    Source,
    SourceLines,
    WatchedFolder,
    WindowResult,
)
from logwarden.app.store.types import WindowRow
from logwarden.schemas import RiskRecord

_DIALECT_INSERTS = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}
CHUNK = 500  # keeps IN lists and multi-row statements under SQLite's variable limit
BASELINE_ROWS_MAX = 5000  # rows per baseline scope (endpoints of a site, message kinds of a program, a host's entities)
# What a database raises when it refuses a value, not when it is unavailable: a constraint or a
# trigger (IntegrityError), a value too big or of the wrong kind (DataError), an integer past 64
# bits (sqlite3 raises OverflowError itself). A locked, full or lost database is none of these.
REFUSALS = (IntegrityError, DataError, OverflowError)


class Transaction:
    """Handed out by `Store.transaction()`; everything done through it commits or rolls back together."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def attempt(self, write: Callable[[Transaction], object]) -> str | None:
        """Run `write` in a savepoint: when the database refuses one of its values (`REFUSALS`), its
        writes are rolled back, the transaction goes on and the refusal is returned in words."""
        try:
            with self.conn.begin_nested():
                write(self)
        except REFUSALS as exc:
            return refusal_text(exc)
        return None

    def upsert_records(self, records: Sequence[RiskRecord]) -> int:
        """Insert new records, update re-analysed ones in place (status and note untouched)."""
        records = list({r.id: r for r in records}.values())  # last one wins within a batch
        now = utc_now()
        for chunk in _chunks(records):
            rows = [record_to_row(r, now=now) for r in chunk]
            _upsert(self.conn, Record.__table__, rows, keys=("id",), keep=KEEP_ON_UPDATE)
            self._replace_evidence(chunk)
        return len(records)

    def upsert_rule_titles(self, rows: list[dict[str, Any]]) -> None:
        for chunk in _chunks(rows):
            _upsert(self.conn, RuleTitle.__table__, list(chunk), keys=("rule_id",), keep=())

    def add_windows(self, rows: Sequence[WindowRow]) -> int:
        now = utc_now()
        dicts = [window_to_row(w, now=now) for w in rows]
        for chunk in _chunks(dicts):
            _upsert(self.conn, WindowResult.__table__, chunk,
                    keys=("source", "inode", "generation", "line_start", "line_end"), keep=("id",))
        return len(dicts)

    def add_errors(self, rows: Sequence[ErrorRow], *, run_id: str | None) -> int:
        now = utc_now()
        dicts = [{"run_id": run_id, "source": e.source, "offset": e.offset, "line_no": e.line_no,
                  "stage": e.stage, "message": e.message, "created_at": now} for e in rows]
        if dicts:
            self.conn.execute(insert(ErrorEntry), _text_safe(self.conn, dicts))
        return len(dicts)

    def set_source(self, path: str, inode: int, *, offset: int, line_no: int, generation: int = 0,
                   format: str | None = None, miner_state: str | bytes | None = None,
                   fingerprint: str | None = None, fingerprint_len: int = 0,
                   fingerprint_prefix: str | None = None, head: bytes | None = None,
                   tail_offset: int | None = None, tail_hash: int | None = None,
                   detector_state: str | None = None) -> None:
        """Record how far generation `generation` of `path` was read, and the fingerprint of what
        was read. `format`/`miner_state`/`fingerprint`/`tail_*`/`detector_state` of None keep the
        stored value."""
        if isinstance(miner_state, bytes):  # Drain3's snapshot is base64: text on every dialect
            miner_state = miner_state.decode("ascii")
        row: dict[str, Any] = {"path": path, "inode": inode, "generation": generation, "offset": offset,
                               "line_no": line_no, "updated_at": utc_now(), "format": format,
                               "miner_state": miner_state, "fingerprint": fingerprint,
                               "fingerprint_len": fingerprint_len, "fingerprint_prefix": fingerprint_prefix,
                               "head": head, "tail_offset": tail_offset, "tail_hash": tail_hash,
                               "detector_state": detector_state}
        keep = tuple(name for name in ("format", "miner_state", "head", "tail_offset", "tail_hash", "detector_state")
                     if row[name] is None)
        keep += ("fingerprint", "fingerprint_len", "fingerprint_prefix") if fingerprint is None else ()
        _upsert(self.conn, Source.__table__, [row], keys=("path", "inode", "generation"), keep=keep)

    def add_line_hashes(self, path: str, inode: int, generation: int, *, first_line: int, hashes: bytes) -> None:
        """The hashes of lines `first_line`… of one generation, read and committed with this transaction.
        Those stored for these lines and after (a re-analysis from line 1) are replaced."""
        if hashes:
            table = SourceLines.__table__
            self.conn.execute(delete(table).where(table.c.path == path, table.c.inode == inode,
                                                  table.c.generation == generation, table.c.first_line >= first_line))
            _upsert(self.conn, SourceLines.__table__, [{"path": path, "inode": inode, "generation": generation,
                                                        "first_line": first_line, "hashes": hashes}],
                    keys=("path", "inode", "generation", "first_line"), keep=())

    def add_watched_folders(self, paths: Sequence[str]) -> None:
        rows = [{"path": path, "first_watched_at": utc_now()} for path in paths]
        _upsert(self.conn, WatchedFolder.__table__, rows, keys=("path",), keep=("first_watched_at",))

    def add_reviews(self, items: Sequence[Any]) -> int:
        """Queue review items (app/review.py) as pending, with the records each may change; an item
        queued again (re-analysis) is pending again."""
        now = utc_now()
        rows = [{"id": i.id, "status": "pending", "priority": i.priority, "run_id": i.run_id, "item": i.to_json(),
                 "error": None, "created_at": now, "updated_at": now} for i in items]
        for chunk in _chunks(rows):
            _upsert(self.conn, ModelReview.__table__, list(chunk), keys=("id",), keep=("created_at",))
        links = [{"review_id": i.id, "record_id": r} for i in items for r in i.record_ids]
        for chunk in _chunks(links):
            _upsert(self.conn, ModelReviewRecord.__table__, list(chunk), keys=("review_id", "record_id"), keep=())
        return len(rows)

    def finish_reviews(self, outcomes: Sequence[tuple[str, str, str | None]]) -> None:
        """(review id, "done" | "failed", error) for each answered item."""
        now = utc_now()
        for review_id, status, error in outcomes:
            self.conn.execute(update(ModelReview).where(ModelReview.id == review_id)
                              .values(status=status, error=(error or None) and error[:2000], updated_at=now))

    def baseline_rows(self, kind: str, scope: str, keys: Sequence[str]) -> dict[str, Any]:
        """The stored rows of `keys`, locked for the merge that follows: on PostgreSQL a
        transaction-scoped advisory lock per (kind, scope) serialises watchers that extend the same
        profile (SQLite's write lock already does)."""
        if self.conn.dialect.name == "postgresql":
            self.conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:k))"), {"k": f"baseline|{kind}|{scope}"})
        table, found = BaselineProfile.__table__, {}
        for chunk in _chunks(list(keys)):
            rows = self.conn.execute(select(table.c.key, table.c.data).where(
                table.c.kind == kind, table.c.scope == scope, table.c.key.in_(chunk)))
            found.update({key: data for key, data in rows})
        return found

    def put_baseline(self, kind: str, scope: str, rows: dict[str, tuple[Any, int]]) -> None:
        """Write merged profile rows: key → (JSON, distinct clients)."""
        now = utc_now()
        dicts = [{"kind": kind, "scope": scope, "key": key, "data": data, "clients": clients, "updated_at": now}
                 for key, (data, clients) in rows.items()]
        for chunk in _chunks(dicts):
            _upsert(self.conn, BaselineProfile.__table__, list(chunk), keys=("kind", "scope", "key"), keep=())
        self._cap_baseline(kind, scope)

    def _cap_baseline(self, kind: str, scope: str) -> None:
        """A scope keeps at most BASELINE_ROWS_MAX rows: the fewest clients, longest unseen go first."""
        table = BaselineProfile.__table__
        where = and_(table.c.kind == kind, table.c.scope == scope, table.c.key != "")
        count = self.conn.execute(select(func.count()).select_from(table).where(where)).scalar_one()
        if count <= BASELINE_ROWS_MAX:
            return
        doomed = self.conn.execute(select(table.c.key).where(where).order_by(table.c.clients, table.c.updated_at)
                                   .limit(count - BASELINE_ROWS_MAX)).scalars().all()
        for chunk in _chunks(doomed):
            self.conn.execute(delete(table).where(table.c.kind == kind, table.c.scope == scope,
                                                  table.c.key.in_(chunk)))

    def _replace_evidence(self, records: Sequence[RiskRecord]) -> None:
        ids = [r.id for r in records]
        self.conn.execute(delete(EvidenceLine).where(EvidenceLine.record_id.in_(ids)))
        lines = [line for r in records for line in evidence_rows(r)]
        if lines:
            self.conn.execute(insert(EvidenceLine), _text_safe(self.conn, lines))


def refusal_text(exc: BaseException) -> str:
    """The database's own words for a refusal (SQLAlchemy's wrapper adds the statement and its values)."""
    cause = getattr(exc, "orig", None) or exc
    return f"{type(cause).__name__}: {clean(str(cause))[:500]}"


def _upsert(conn: Connection, table: Table, rows: list[dict[str, Any]], *, keys: Sequence[str],
            keep: Sequence[str]) -> None:
    """INSERT … ON CONFLICT (keys) DO UPDATE every column except `keep` (and the keys)."""
    if not rows:
        return
    rows = _text_safe(conn, rows)
    make_insert = _DIALECT_INSERTS.get(conn.dialect.name)
    if make_insert is None:
        _upsert_generic(conn, table, rows, keys=keys, keep=keep)
        return
    stmt = make_insert(table)
    updated = [c for c in rows[0] if c not in keep and c not in keys]
    if not updated:  # nothing to change on a conflict (e.g. a folder already watched)
        conn.execute(stmt.on_conflict_do_nothing(index_elements=list(keys)), rows)
        return
    stmt = stmt.on_conflict_do_update(index_elements=list(keys),
                                      set_={name: stmt.excluded[name] for name in updated})
    conn.execute(stmt, rows)


def _upsert_generic(conn: Connection, table: Table, rows: list[dict[str, Any]], *, keys: Sequence[str],
                    keep: Sequence[str]) -> None:
    """Any other dialect: look the keys up, UPDATE those found, INSERT the rest."""
    key_cols = [table.c[k] for k in keys]
    wanted = [tuple(row[k] for k in keys) for row in rows]
    found = set(conn.execute(select(*key_cols).where(tuple_(*key_cols).in_(wanted))))
    new = [row for row, key in zip(rows, wanted) if key not in found]
    if new:
        conn.execute(insert(table), new)
    for row, key in zip(rows, wanted):
        if key in found:
            values = {c: v for c, v in row.items() if c not in keep and c not in keys}
            match = and_(*(col == value for col, value in zip(key_cols, key)))
            conn.execute(update(table).where(match).values(values))


def _text_safe(conn: Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """No driver stores a lone surrogate (a file name's undecodable byte, a JSON escape that slipped
    past the edge): it becomes U+FFFD rather than failing the transaction. PostgreSQL text cannot
    hold NUL (a log line, a file name or model output may): drop it. JSON columns are serialised
    with NUL escaped as \\u0000, which `json` columns accept."""
    postgres = conn.dialect.name == "postgresql"
    return [{k: _safe(v, postgres) if isinstance(v, str) else v for k, v in row.items()} for row in rows]


def _safe(text: str, postgres: bool) -> str:
    text = clean(text)
    return text.replace("\x00", "") if postgres else text


def _chunks(items: Sequence[Any], size: int = CHUNK) -> list[Sequence[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)]
