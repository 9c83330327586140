"""The read side of `Store`: connections, and every query that only reads.

`Queries` is `Store`'s base: callers ask `store.query_records(...)`, `store.list_windows(...)` and
the rest as before. It opens the connections (`_read`; `Store._write` takes the write lock on the
same plumbing) and turns a database that fails — down, locked, not a database — into a
`StoreError` saying what to check.

Owns: the reads of sources and their line hashes, watched folders, windows, errors, records and
their review trail, the model's review queue, aggregates and baselines. Does not write, migrate or
open stores (`store.py`, `writes.py`, `migrations.py`); does not know how records are produced.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, func, inspect, or_, select
from sqlalchemy.exc import DatabaseError, OperationalError

from logwarden.app.store import aggregates
from logwarden.app.store.convert import row_to_error, row_to_record, row_to_review, row_to_source, row_to_window
from logwarden.app.store.database import WRITE_OPTION
from logwarden.app.store.filters import sort_column, where
from logwarden.app.store.tables import (
    BaselineMute,
    BaselineProfile,
    ErrorEntry,
    ModelReview,
    Record,
    Review,
    RuleTitle,
    Source,
    SourceLines,
    WatchedFolder,
    WindowResult,
)
from logwarden.app.store.types import ErrorInfo, RecordFilter, ReviewInfo, SourceState, WindowRow
from logwarden.errors import InputError, StoreError, StoreInputError
from logwarden.schemas import RiskRecord

MAX_ROWS = 2**62  # any larger LIMIT/OFFSET would overflow the databases' 64-bit integers
TITLE_CHUNK = 500  # rule ids per IN (…): SQLite's bound parameters are limited


class Queries:
    """The store's reads and connections (`Store` adds the writes, runs and migrations)."""

    engine: Engine

    # -- sources, watched folders, windows, errors ---------------------------------------------

    def get_source(self, path: str, inode: int, generation: int | None = None) -> SourceState | None:
        """One generation of a source; the latest one when `generation` is None."""
        stmt = select(Source.__table__).where(Source.path == path, Source.inode == inode)
        if generation is not None:
            stmt = stmt.where(Source.generation == generation)
        rows = self._rows(stmt.order_by(Source.generation.desc()).limit(1))
        return row_to_source(rows[0]) if rows else None

    def list_sources(self, *, under: Sequence[str | Path] = ()) -> list[SourceState]:
        """Every source, or those whose path lies in one of the folders `under`."""
        stmt = select(Source.__table__).order_by(Source.path, Source.inode, Source.generation)
        if under:
            prefixes = [str(folder).rstrip("/") + "/" for folder in under]
            stmt = stmt.where(or_(*(Source.path.startswith(p, autoescape=True) for p in prefixes)))
        return [row_to_source(r) for r in self._rows(stmt)]

    def line_hashes(self, path: str, inode: int, generation: int) -> list[tuple[int, bytes]]:
        """(first line, hashes) runs of one generation's committed lines, in line order."""
        stmt = (select(SourceLines.first_line, SourceLines.hashes)
                .where(SourceLines.path == path, SourceLines.inode == inode, SourceLines.generation == generation)
                .order_by(SourceLines.first_line))
        with self._read() as conn:
            return [(first, bytes(blob)) for first, blob in conn.execute(stmt)]

    def watched_folders(self) -> list[str]:
        return list(self._scalars(select(WatchedFolder.path).order_by(WatchedFolder.path)))

    def list_windows(self, *, source: str | None = None, inode: int | None = None,
                     run_id: str | None = None, generation: int | None = None) -> list[WindowRow]:
        """Analysed windows in line order, for checking that every line is accounted for."""
        stmt = select(WindowResult.__table__)
        for column, value in ((WindowResult.source, source), (WindowResult.inode, inode),
                              (WindowResult.run_id, run_id), (WindowResult.generation, generation)):
            if value is not None:
                stmt = stmt.where(column == value)
        stmt = stmt.order_by(WindowResult.source, WindowResult.inode, WindowResult.generation,
                             WindowResult.line_start)
        return [row_to_window(r) for r in self._rows(stmt)]

    def list_errors(self, *, run_id: str | None = None, limit: int = 100) -> list[ErrorInfo]:
        stmt = select(ErrorEntry.__table__).order_by(ErrorEntry.id.desc()).limit(limit)
        if run_id is not None:
            stmt = stmt.where(ErrorEntry.run_id == run_id)
        return [row_to_error(r) for r in self._rows(stmt)]

    # -- records -------------------------------------------------------------------------------

    def get_record(self, record_id: str) -> RiskRecord | None:
        """The record with this id, or with the one id this prefix starts (the 12 characters the
        CLI and the UI print); None when none does. An ambiguous prefix is an `InputError`."""
        found = self.resolve_id(record_id)
        rows = self._rows(select(Record.__table__).where(Record.id == found)) if found else []
        return self._titled([row_to_record(rows[0])])[0] if rows else None

    def resolve_id(self, prefix: str) -> str | None:
        """The full id of the one record whose id is or starts with `prefix`; None when none."""
        prefix = prefix.strip()
        if not prefix:
            return None
        stmt = select(Record.id).where(Record.id.startswith(prefix, autoescape=True)).order_by(Record.id).limit(3)
        ids = self._scalars(stmt)
        if prefix in ids or len(ids) == 1:
            return prefix if prefix in ids else ids[0]
        if ids:
            raise InputError(f"The id prefix {prefix!r} matches several records ({', '.join(i[:16] for i in ids)}"
                             f"{', …' if len(ids) > 2 else ''}); give more of the id.")
        return None

    def resolve_source(self, given: str) -> str:
        """The stored source path a record filter's `given` names: the full path, else the one source it is
        a path suffix of (`nginx/access.log`) or the file name of (`access.log`). Several → an `InputError`
        listing them; none → an `InputError` listing a few sources there are (a typo must not read as "no records")."""
        known = self._scalars(select(Record.source).distinct().order_by(Record.source))
        if given in known:
            return given
        tail = given.strip().lstrip("/")
        found = [s for s in known if tail and (s.endswith("/" + tail) or s.endswith("\\" + tail))]
        if len(found) == 1:
            return found[0]
        if found:
            raise InputError(f"--source {given!r} matches several sources: {', '.join(found[:10])}"
                             f"{', …' if len(found) > 10 else ''}; give more of the path.")
        raise InputError(f"--source {given!r} matches no source of a stored record"
                         + (f" (there are {len(known)}: {', '.join(known[:5])}{', …' if len(known) > 5 else ''})"
                            if known else " (the store holds no records)") + ".")

    def query_records(self, filters: RecordFilter | None = None, *, order_by: str = "last_ts",
                      descending: bool = True, limit: int = 50, offset: int = 0) -> list[RiskRecord]:
        column = sort_column(order_by)
        direction = column.desc() if descending else column.asc()
        limit, offset = min(limit, MAX_ROWS), min(offset, MAX_ROWS)  # SQL integers are 64-bit: --limit 1e30 is "all"
        # Tie-break on id so that pages never overlap or skip when sort values repeat.
        stmt = (select(Record.__table__).where(where(filters or RecordFilter()))
                .order_by(direction, Record.id).limit(limit).offset(offset))
        return self._titled([row_to_record(r) for r in self._rows(stmt)])

    def _titled(self, records: list[RiskRecord]) -> list[RiskRecord]:
        """The records with their rules' titles (`RiskRecord.rule_titles`), as the runs that loaded them saved them."""
        titles = self.rule_titles({rule_id for r in records for rule_id in r.detections})
        return [r.model_copy(update={"rule_titles": {i: titles[i] for i in r.detections if i in titles}})
                if titles else r for r in records]

    def rule_titles(self, rule_ids: Iterable[str]) -> dict[str, str]:
        """id → title of the rules with these ids that a run loaded."""
        wanted, found = sorted(rule_ids), {}
        for start in range(0, len(wanted), TITLE_CHUNK):
            stmt = select(RuleTitle.rule_id, RuleTitle.title).where(
                RuleTitle.rule_id.in_(wanted[start:start + TITLE_CHUNK]))
            found.update((row["rule_id"], row["title"]) for row in self._rows(stmt))
        return found

    def record_ids(self, filters: RecordFilter | None = None) -> list[str]:
        """The ids of the records matching `filters` (no rows built: a regrouping's span may hold 200k)."""
        return self._scalars(select(Record.id).where(where(filters or RecordFilter())).order_by(Record.id))

    def count_records(self, filters: RecordFilter | None = None) -> int:
        with self._read() as conn:
            return conn.scalar(select(func.count()).select_from(Record).where(where(filters or RecordFilter())))

    def list_reviews(self, record_id: str) -> list[ReviewInfo]:
        stmt = select(Review.__table__).where(Review.record_id == record_id).order_by(Review.id)
        return [row_to_review(r) for r in self._rows(stmt)]

    # -- aggregates ----------------------------------------------------------------------------

    def counts_by_level(self, filters: RecordFilter | None = None) -> dict[str, int]:
        return self._aggregate(aggregates.counts_by_level, filters)

    def counts_by_category(self, filters: RecordFilter | None = None) -> dict[str, int]:
        return self._aggregate(aggregates.counts_by_category, filters)

    def risk_over_time(self, filters: RecordFilter | None = None, *,
                       bucket: str = "hour") -> list[aggregates.TimeCount]:
        return self._aggregate(aggregates.risk_over_time, filters, bucket=bucket)

    def top_indicators(self, filters: RecordFilter | None = None, *, kind: str = "ips",
                       limit: int = 10) -> list[aggregates.IndicatorCount]:
        return self._aggregate(aggregates.top_indicators, filters, kind=kind, limit=limit)

    def technique_counts(self, filters: RecordFilter | None = None) -> list[aggregates.TechniqueCount]:
        return self._aggregate(aggregates.technique_counts, filters)

    def last_event_span(self, filters: RecordFilter | None = None) -> tuple[datetime | None, datetime | None]:
        return self._aggregate(aggregates.last_event_span, filters)

    def kpis(self, filters: RecordFilter | None = None) -> dict[str, Any]:
        return self._aggregate(aggregates.kpis, filters)

    # -- model reviews -------------------------------------------------------------------------

    def pending_reviews(self, *, run_id: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Review items (JSON) waiting for the model, most suspicious first."""
        stmt = select(ModelReview.item).where(ModelReview.status == "pending")
        if run_id is not None:
            stmt = stmt.where(ModelReview.run_id == run_id)
        stmt = stmt.order_by(ModelReview.priority.desc(), ModelReview.created_at, ModelReview.id)
        return self._scalars(stmt.limit(limit) if limit else stmt)

    def count_reviews(self, *, status: str = "pending", run_id: str | None = None) -> int:
        stmt = select(func.count()).select_from(ModelReview).where(ModelReview.status == status)
        if run_id is not None:
            stmt = stmt.where(ModelReview.run_id == run_id)
        with self._read() as conn:
            if not inspect(conn).has_table("model_reviews"):
                return 0
            return conn.execute(stmt).scalar_one()

    # -- baselines -----------------------------------------------------------------------------

    def baseline_rows(self, kind: str, scope: str) -> dict[str, Any]:
        """Every row of one baseline scope: key → JSON."""
        table = BaselineProfile.__table__
        with self._read() as conn:
            return {key: data for key, data in conn.execute(
                select(table.c.key, table.c.data).where(table.c.kind == kind, table.c.scope == scope))}

    def iter_baseline(self, *, kind: str | None = None, scope: str | None = None,
                      batch: int = 1000) -> Iterator[dict[str, Any]]:
        """Every baseline row (kind, scope, key, data, clients), in key order, a batch at a time."""
        table = BaselineProfile.__table__
        stmt = select(table.c.kind, table.c.scope, table.c.key, table.c.data, table.c.clients)
        if kind is not None:
            stmt = stmt.where(table.c.kind == kind)
        if scope is not None:
            stmt = stmt.where(table.c.scope == scope)
        with self._read() as conn:
            result = conn.execute(stmt.order_by(table.c.kind, table.c.scope, table.c.key))
            while rows := result.mappings().fetchmany(batch):
                yield from (dict(row) for row in rows)

    def baseline_summary(self) -> list[dict[str, Any]]:
        """Per kind: rows, scopes and the JSON size they take."""
        sizes: dict[str, dict[str, Any]] = {}
        for row in self.iter_baseline():
            entry = sizes.setdefault(row["kind"], {"kind": row["kind"], "rows": 0, "scopes": set(), "bytes": 0})
            entry["rows"] += 1
            entry["scopes"].add(row["scope"])
            entry["bytes"] += len(json.dumps(row["data"], separators=(",", ":")))
        return [{**e, "scopes": len(e["scopes"])} for e in sizes.values()]

    def baseline_mutes(self) -> set[str]:
        with self._read() as conn:
            if not inspect(conn).has_table("baseline_mutes"):
                return set()
            return set(conn.execute(select(BaselineMute.ref)).scalars())

    # -- plumbing ------------------------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with self._connection(write=False) as conn, conn.begin():
            yield conn

    @contextmanager
    def _connection(self, *, write: bool) -> Iterator[Connection]:
        try:
            with self.engine.connect() as conn:
                conn.execution_options(**{WRITE_OPTION: write})
                yield conn
        except DatabaseError as exc:
            # The database itself failed (down, locked, not a database); anything else
            # (an integrity error) is a bug and keeps its traceback.
            if not isinstance(exc, OperationalError) and type(exc) is not DatabaseError:
                raise
            raise _store_error(self.engine, exc) from exc

    def _rows(self, stmt: Any) -> list[Any]:
        with self._read() as conn:
            return list(conn.execute(stmt).mappings())

    def _scalars(self, stmt: Any) -> list[Any]:
        with self._read() as conn:
            return list(conn.execute(stmt).scalars())

    def _aggregate(self, fn: Any, filters: RecordFilter | None, **kwargs: Any) -> Any:
        with self._read() as conn:
            return fn(conn, filters or RecordFilter(), **kwargs)


# SQLite's words for a file that is not a database, or a damaged one: the --db is wrong, not busy.
_NOT_A_DATABASE = ("file is not a database", "malformed", "unable to open database file")


def _store_error(engine: Engine, exc: DatabaseError) -> StoreError:
    url = shown_url(engine.url)
    reason = str(exc.orig).strip().splitlines()[0] if str(exc.orig).strip() else type(exc.orig).__name__
    if any(text in reason for text in _NOT_A_DATABASE):
        return StoreInputError(f"{url} is not a usable logwarden database ({reason}). Pass another "
                               "--db (or LOGWARDEN_DB), or move the damaged file aside.")
    if engine.dialect.name == "sqlite":
        hint = ("Check that the file/folder is writable and not on a network share that lacks locking; "
                "if it is 'database is locked', another process holds a long write transaction.")
    else:
        hint = "Check that the server is up and the URL's host, port, user, password and database name."
    return StoreError(f"Database error on {url}: {reason}. {hint}")


def shown_url(url: Any) -> str:
    """The URL as the user gave it: a read-only SQLite file opened through SQLite's URI syntax
    (`file:/path?immutable=1&uri=true`) is shown as its plain sqlite:/// URL again."""
    if url.get_backend_name() == "sqlite" and url.query.get("uri") == "true":
        url = url.set(database=url.database.removeprefix("file:"), query={})
    return url.render_as_string(hide_password=True)
