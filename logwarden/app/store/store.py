"""`Store`: the one door to the database for the CLI, the watcher and the UI.

Transactions are short: each call opens a connection from the pool, does its work and commits.
Writers take SQLite's write lock up front (see engine.py), so a watcher and a UI can share one file;
on PostgreSQL several watchers (on several hosts) write one database at once.

A run is `running` until it finishes; one whose process exits without finishing it (an error, a
signal) is marked `aborted` at exit, and one whose process died (kill -9) is marked `aborted` by
the next run that starts on the same host.

Owns: the public API (runs, records, reviews, sources, watched folders, errors, aggregates,
info). Does not know how records are produced, displayed or exported.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, delete, func, insert, inspect, or_, select, update
from sqlalchemy.exc import DatabaseError, OperationalError

from logwarden.app.events import ErrorRow
from logwarden.app.safetext import clean
from logwarden.app.store import aggregates
from logwarden.app.store.convert import (
    row_to_error,
    row_to_record,
    row_to_review,
    row_to_run,
    row_to_source,
    row_to_window,
    utc_now,
)
from logwarden.app.store.database import WRITE_OPTION, is_sqlite, make_engine, parse_url, require_file, sqlite_file
from logwarden.app.store.filters import sort_column, where
from logwarden.app.store.incidents import IncidentStore
from logwarden.app.store.migrations import LATEST_VERSION, current_version, foreign_error, migrate, store_kind
from logwarden.app.store.tables import (
    Base,
    BaselineMute,
    BaselineProfile,
    ErrorEntry,
    ModelReview,
    Record,
    Review,
    Run,
    Source,
    SourceLines,
    WatchedFolder,
    WindowResult,
)
from logwarden.app.store.types import ErrorInfo, RecordFilter, ReviewInfo, RunInfo, SourceState, WindowRow
from logwarden.app.store.writes import Transaction
from logwarden.errors import InputError, StoreError, StoreInputError
from logwarden.schemas import RiskRecord
from logwarden.schemas.record import STATUSES

TABLES = ("sources", "runs", "records", "evidence", "windows", "errors", "reviews", "watched_folders",
          "baseline_profiles", "baseline_mutes", "model_reviews", "incidents", "incident_records",
          "source_lines")
COMMAND_MAX = 200  # runs.command's width
QUICK_CHECK_ROWS = 3  # problems a damaged file's check lists before it stops (the first is shown)
MAX_ROWS = 2**62  # any larger LIMIT/OFFSET would overflow the databases' 64-bit integers


def open_store(url: str, *, readonly: bool = False, current: bool = True, create: bool = True) -> Store:
    """Open (creating folders and tables as needed) and migrate the database at `url` (the command
    resolves it from --db or `Settings.db_url`). `readonly`: open an existing logwarden store as it is, writing
    nothing — for the commands that only read; `current` (with it) also requires its schema to be
    this logwarden's (`db info` shows an older one as it is). `create=False` (commands that review
    what is there): a store that does not exist yet — no SQLite file, or a PostgreSQL database
    without logwarden's tables — is a `StoreInputError` instead of a new empty store (a mistyped
    `--db` must not look like "no records"). Another application's database is refused either
    way, untouched (`StoreInputError`)."""
    if not create:
        require_file(url)
    _refuse_foreign_file(url)
    store = Store(make_engine(url, readonly=readonly))
    if not create:
        _require_store(store)
    if readonly:
        store.check_readable(current=current)
    else:
        store.migrate()
    return store


def _require_store(store: Store) -> None:
    """`create=False`: another application's database or one without logwarden's tables is a
    `StoreInputError` (the store is closed first)."""
    with store._read() as conn:
        kind = store_kind(conn)
        error = foreign_error(_shown_url(store.engine.url), conn) if kind == "foreign" else None
    if kind == "empty" and error is None:
        error = StoreInputError(f"{_shown_url(store.engine.url)} holds no logwarden store: nothing to show. It is "
                                "created by `logwarden analyze`, `watch` or `triage` (or pass another --db).")
    if error is not None:
        store.close()
        raise error


def _refuse_foreign_file(url: str) -> None:
    """An existing SQLite file is looked at read-only first: opening it for writing sets its
    journal mode, which would already change another application's database."""
    path = sqlite_file(parse_url(url)) if is_sqlite(parse_url(url)) else None
    if path is None or not path.is_file() or path.stat().st_size == 0:
        return
    probe = Store(make_engine(url, readonly=True))
    try:
        with probe._read() as conn:
            if store_kind(conn) == "foreign":
                raise foreign_error(_shown_url(probe.engine.url), conn)
            _refuse_damaged(conn, _shown_url(probe.engine.url))
    finally:
        probe.close()


def _refuse_damaged(conn: Connection, url: str) -> None:
    """A damaged SQLite file is refused before anything reads or writes it, by every command: a page
    only fails when it is read, so `db info` (counts from intact indexes) and `analyze --resume` (which
    reads its sources and writes records) went on over a file other commands refused. `quick_check`
    reads every page once (about a second per GiB), not the costlier cross-checks of `integrity_check`."""
    rows = [row[0] for row in conn.exec_driver_sql(f"PRAGMA quick_check({QUICK_CHECK_ROWS})")]
    if rows != ["ok"]:
        problems = [line for row in rows for line in row.splitlines() if line and not line.startswith("***")]
        raise StoreInputError(f"{url} is damaged (SQLite's quick_check: {(problems or rows)[0]}). Nothing was read or "
                              "written. Move it aside and restore a backup, or salvage it with `sqlite3 FILE "
                              "'.recover' | sqlite3 NEW.db` and pass --db NEW.db.")


class Store:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.applied: list[int] = []  # schema versions the last `migrate` applied
        self._open_runs: set[str] = set()
        self.incidents = IncidentStore(read=self._read, write=self._write,
                                       connect=lambda: self._connection(write=True), dialect=engine.dialect.name)

    # -- lifecycle -------------------------------------------------------------------------

    def migrate(self) -> list[int]:
        """Apply the pending schema steps; returns (and remembers in `applied`) their versions."""
        with self._write() as conn:
            self.applied = migrate(conn, url=_shown_url(self.engine.url))
        return self.applied

    def check_readable(self, *, current: bool = True) -> None:
        """Is this a logwarden store that can be read as it is? Else `StoreInputError` saying why."""
        url = _shown_url(self.engine.url)
        with self._read() as conn:
            kind = store_kind(conn)
            if kind == "foreign":
                raise foreign_error(url, conn)
            version = current_version(conn)
        if kind == "empty":
            raise StoreInputError(f"{url} holds no logwarden store yet: nothing to show. It is created by "
                                  "`logwarden analyze`, `watch` or `triage` (or pass another --db).")
        if current and version < LATEST_VERSION:
            raise StoreInputError(f"{url} is at schema version {version}, older than this logwarden's "
                                  f"{LATEST_VERSION}; reading commands do not change it: run `logwarden db migrate` "
                                  "(or any command that writes, e.g. analyze) first.")

    def schema_version(self) -> int:
        """The applied schema version; 0 for a database without logwarden's tables."""
        with self._read() as conn:
            return current_version(conn)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One database transaction: commits when the block ends, rolls back if it raises."""
        with self._write() as conn:
            yield Transaction(conn)

    # -- runs --------------------------------------------------------------------------------

    def start_run(self, *, command: str, config: dict[str, Any]) -> str:
        """A new `running` run owned by this process; runs of dead processes on this host are
        marked `aborted` first, and this one will be if the process exits without finishing it."""
        run_id = uuid.uuid4().hex
        with self._write() as conn:
            _abort_stale_runs(conn)
            conn.execute(insert(Run).values(id=run_id, started_at=utc_now(), command=clean(command[:COMMAND_MAX]),
                                            config=config, status="running", host=_HOST, pid=os.getpid()))
        if not self._open_runs:
            atexit.register(self._abort_open_runs)
        self._open_runs.add(run_id)
        return run_id

    def finish_run(self, run_id: str, *, status: str, metrics: dict[str, Any]) -> None:
        stmt = update(Run).where(Run.id == run_id).values(finished_at=utc_now(), status=status, metrics=metrics)
        with self._write() as conn:
            if conn.execute(stmt).rowcount == 0:
                raise InputError(f"No run {run_id!r}; start one with store.start_run() first.")
        self._open_runs.discard(run_id)

    def _abort_open_runs(self) -> None:
        """At exit: this process's runs that never finished (an error, a signal) are `aborted`."""
        open_runs, self._open_runs = list(self._open_runs), set()
        if not open_runs:
            return
        try:
            with self._write() as conn:
                conn.execute(update(Run).where(Run.id.in_(open_runs), Run.status == "running")
                             .values(status="aborted", finished_at=utc_now()))
        except (StoreError, DatabaseError):  # at exit there is no one left to tell
            pass

    def list_runs(self, limit: int = 20) -> list[RunInfo]:
        stmt = select(Run.__table__).order_by(Run.started_at.desc()).limit(limit)
        return [row_to_run(row) for row in self._rows(stmt)]

    # -- writes outside an explicit transaction --------------------------------------------

    def upsert_records(self, records: Sequence[RiskRecord]) -> int:
        with self.transaction() as tx:
            return tx.upsert_records(records)

    def add_errors(self, rows: Sequence[ErrorRow], *, run_id: str | None = None) -> int:
        with self.transaction() as tx:
            return tx.add_errors(rows, run_id=run_id)

    def add_windows(self, rows: Sequence[WindowRow]) -> int:
        with self.transaction() as tx:
            return tx.add_windows(rows)

    def set_source(self, path: str, inode: int, *, offset: int, line_no: int, generation: int = 0,
                   format: str | None = None, miner_state: str | None = None) -> None:
        with self.transaction() as tx:
            tx.set_source(path, inode, offset=offset, line_no=line_no, generation=generation, format=format,
                          miner_state=miner_state)

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

    # -- records -----------------------------------------------------------------------------

    def get_record(self, record_id: str) -> RiskRecord | None:
        """The record with this id, or with the one id this prefix starts (the 12 characters the
        CLI and the UI print); None when none does. An ambiguous prefix is an `InputError`."""
        found = self.resolve_id(record_id)
        rows = self._rows(select(Record.__table__).where(Record.id == found)) if found else []
        return row_to_record(rows[0]) if rows else None

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

    def query_records(self, filters: RecordFilter | None = None, *, order_by: str = "last_ts",
                      descending: bool = True, limit: int = 50, offset: int = 0) -> list[RiskRecord]:
        column = sort_column(order_by)
        direction = column.desc() if descending else column.asc()
        limit, offset = min(limit, MAX_ROWS), min(offset, MAX_ROWS)  # SQL integers are 64-bit: --limit 1e30 is "all"
        # Tie-break on id so that pages never overlap or skip when sort values repeat.
        stmt = (select(Record.__table__).where(where(filters or RecordFilter()))
                .order_by(direction, Record.id).limit(limit).offset(offset))
        return [row_to_record(r) for r in self._rows(stmt)]

    def record_ids(self, filters: RecordFilter | None = None) -> list[str]:
        """The ids of the records matching `filters` (no rows built: a regrouping's span may hold 200k)."""
        return self._scalars(select(Record.id).where(where(filters or RecordFilter())).order_by(Record.id))

    def count_records(self, filters: RecordFilter | None = None) -> int:
        with self._read() as conn:
            return conn.scalar(select(func.count()).select_from(Record).where(where(filters or RecordFilter())))

    # -- reviews -----------------------------------------------------------------------------

    def add_review(self, record_id: str, *, status: str | None = None, note: str | None = None,
                   reviewer: str | None = None) -> str:
        """Append to the audit trail and make it the record's current status and note; `status`
        None keeps the record's current status (a note alone never changes it). Returns the
        status written. `record_id` may be a unique prefix of the id."""
        if status is not None and status not in STATUSES:
            raise InputError(f"Unknown review status {status!r}; use one of: {', '.join(STATUSES)}.")
        record_id = self.resolve_id(record_id) or record_id
        with self._write() as conn:
            current = conn.scalar(select(Record.status).where(Record.id == record_id))
            if current is None:
                raise InputError(f"No record {record_id!r}; list record ids with `logwarden records list`.")
            status = status or current
            conn.execute(update(Record).where(Record.id == record_id).values(status=status, analyst_note=note))
            conn.execute(insert(Review).values(record_id=record_id, status=status, note=note,
                                               reviewer=reviewer, created_at=utc_now()))
        return status

    def list_reviews(self, record_id: str) -> list[ReviewInfo]:
        stmt = select(Review.__table__).where(Review.record_id == record_id).order_by(Review.id)
        return [row_to_review(r) for r in self._rows(stmt)]

    # -- aggregates --------------------------------------------------------------------------

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

    def kpis(self, filters: RecordFilter | None = None) -> dict[str, Any]:
        return self._aggregate(aggregates.kpis, filters)

    # -- model reviews -----------------------------------------------------------------------

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

    # -- baselines ---------------------------------------------------------------------------

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

    def reset_baseline(self, *, kind: str | None = None, scope: str | None = None) -> int:
        """Forget learned rows (all, one kind, or one scope of a kind); mutes stay."""
        table = BaselineProfile.__table__
        stmt = delete(table)
        if kind is not None:
            stmt = stmt.where(table.c.kind == kind)
        if scope is not None:
            stmt = stmt.where(table.c.scope == scope)
        with self._write() as conn:
            return conn.execute(stmt).rowcount

    def baseline_mutes(self) -> set[str]:
        with self._read() as conn:
            if not inspect(conn).has_table("baseline_mutes"):
                return set()
            return set(conn.execute(select(BaselineMute.ref)).scalars())

    def mute(self, ref: str, *, note: str | None = None) -> None:
        with self._write() as conn:
            conn.execute(delete(BaselineMute).where(BaselineMute.ref == ref))
            conn.execute(insert(BaselineMute).values(ref=ref, note=note, created_at=utc_now()))

    def unmute(self, ref: str) -> bool:
        with self._write() as conn:
            return conn.execute(delete(BaselineMute).where(BaselineMute.ref == ref)).rowcount > 0

    # -- info --------------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """URL, dialect, schema version, row counts (of the tables there are) and file size."""
        url = self.engine.url
        with self._read() as conn:
            present = set(inspect(conn).get_table_names())
            counts = {name: conn.scalar(select(func.count()).select_from(Base.metadata.tables[name]))
                      for name in TABLES if name in present}
            version = current_version(conn)
        found: dict[str, Any] = {"url": _shown_url(url), "dialect": url.get_backend_name(),
                                 "schema_version": version, "tables": counts}
        path = sqlite_file(url) if is_sqlite(url) else None
        if path is not None:
            found["path"] = str(path)
            found["file_size"] = sum(p.stat().st_size for p in _sqlite_files(path) if p.exists())
        return found

    # -- plumbing ----------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        with self._connection(write=True) as conn, conn.begin():
            yield conn

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


_HOST = socket.gethostname()[:200]
# SQLite's words for a file that is not a database, or a damaged one: the --db is wrong, not busy.
_NOT_A_DATABASE = ("file is not a database", "malformed", "unable to open database file")


def _store_error(engine: Engine, exc: DatabaseError) -> StoreError:
    url = _shown_url(engine.url)
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


def _shown_url(url: Any) -> str:
    """The URL as the user gave it: a read-only SQLite file opened through SQLite's URI syntax
    (`file:/path?immutable=1&uri=true`) is shown as its plain sqlite:/// URL again."""
    if url.get_backend_name() == "sqlite" and url.query.get("uri") == "true":
        url = url.set(database=url.database.removeprefix("file:"), query={})
    return url.render_as_string(hide_password=True)


def _abort_stale_runs(conn: Connection) -> None:
    """`running` runs of this host whose process is gone (kill -9, a crash) become `aborted`."""
    rows = conn.execute(select(Run.id, Run.pid, Run.host).where(Run.status == "running")).all()
    stale = [run_id for run_id, pid, host in rows if host is None or (host == _HOST and not _alive(pid))]
    if stale:
        conn.execute(update(Run).where(Run.id.in_(stale)).values(status="aborted", finished_at=utc_now()))


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def _sqlite_files(path: Path) -> list[Path]:
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
