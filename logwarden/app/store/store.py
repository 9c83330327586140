"""`Store`: the one door to the database for the CLI, the watcher and the UI.

Transactions are short: each call opens a connection from the pool, does its work and commits.
Writers take SQLite's write lock up front (see engine.py), so a watcher and a UI can share one file;
on PostgreSQL several watchers (on several hosts) write one database at once.

A run is `running` until it finishes; one whose process exits without finishing it (an error, a
signal) is marked `aborted` at exit, and one whose process died (kill -9) is marked `aborted` by
the next run that starts on the same host.

Owns: the public API (runs, records, reviews, sources, watched folders, errors, aggregates,
info): opening a store, migrations, runs and the writes; the reads and the connections are its
base's, `Queries` (queries.py). Does not know how records are produced, displayed or exported.
"""

from __future__ import annotations

import atexit
import os
import socket
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, delete, func, insert, inspect, select, update
from sqlalchemy.exc import DatabaseError

from logwarden.app.events import ErrorRow
from logwarden.app.safetext import clean
from logwarden.app.store import feedback
from logwarden.app.store.convert import row_to_run, utc_now
from logwarden.app.store.database import is_sqlite, make_engine, parse_url, require_file, sqlite_file
from logwarden.app.store.deliveries import DeliveryStore
from logwarden.app.store.incidents import IncidentStore
from logwarden.app.store.migrations import (
    LATEST_VERSION,
    current_version,
    foreign_error,
    migrate,
    missing_versions,
    store_kind,
)
from logwarden.app.store.queries import Queries, shown_url
from logwarden.app.store.reviews import ReviewChange, review_record
from logwarden.app.store.tables import Base, BaselineMute, BaselineProfile, Run
from logwarden.app.store.types import FeedbackInfo, RunInfo, WindowRow
from logwarden.app.store.writes import Transaction
from logwarden.errors import InputError, StoreError, StoreInputError
from logwarden.schemas import RiskRecord

TABLES = ("sources", "runs", "records", "evidence", "windows", "errors", "reviews", "watched_folders",
          "baseline_profiles", "baseline_mutes", "model_reviews", "incidents", "incident_records",
          "source_lines", "deliveries", "rule_titles", "triage_answers", "model_feedback")
COMMAND_MAX = 200  # runs.command's width
QUICK_CHECK_ROWS = 3  # problems a damaged file's check lists before it stops (the first is shown)


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
        error = foreign_error(shown_url(store.engine.url), conn) if kind == "foreign" else None
    if kind == "empty" and error is None:
        error = StoreInputError(f"{shown_url(store.engine.url)} holds no logwarden store: nothing to show. It is "
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
                raise foreign_error(shown_url(probe.engine.url), conn)
            _refuse_damaged(conn, shown_url(probe.engine.url))
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


class Store(Queries):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.applied: list[int] = []  # schema versions the last `migrate` applied
        self._open_runs: set[str] = set()
        self.incidents = IncidentStore(read=self._read, write=self._write,
                                       connect=lambda: self._connection(write=True), dialect=engine.dialect.name)
        self.deliveries = DeliveryStore(read=self._read, write=self._write)

    # -- lifecycle -------------------------------------------------------------------------

    def migrate(self) -> list[int]:
        """Apply the pending schema steps; returns (and remembers in `applied`) their versions."""
        with self._write() as conn:
            self.applied = migrate(conn, url=shown_url(self.engine.url))
        return self.applied

    def check_readable(self, *, current: bool = True) -> None:
        """Is this a logwarden store that can be read as it is? Else `StoreInputError` saying why."""
        url = shown_url(self.engine.url)
        with self._read() as conn:
            kind = store_kind(conn)
            if kind == "foreign":
                raise foreign_error(url, conn)
            version, missing = current_version(conn), missing_versions(conn)
        if kind == "empty":
            raise StoreInputError(f"{url} holds no logwarden store yet: nothing to show. It is created by "
                                  "`logwarden analyze`, `watch` or `triage` (or pass another --db).")
        if current and missing:
            raise StoreInputError(f"{url} is at schema version {version}, lacking this logwarden's step(s) "
                                  f"{', '.join(map(str, missing))} (of {LATEST_VERSION}); reading commands do not change it: run `logwarden db migrate` "
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

    def remember_rules(self, titles: dict[str, str]) -> None:
        """The titles of the rules a run loaded, by id (a rule's newer title replaces its older one)."""
        rows = [{"rule_id": rule_id, "title": title} for rule_id, title in titles.items()]
        with self._write() as conn:
            Transaction(conn).upsert_rule_titles(rows)

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

    def get_run(self, run_id: str) -> RunInfo | None:
        stmt = select(Run.__table__).where(Run.id == run_id)
        rows = [row_to_run(row) for row in self._rows(stmt)]
        return rows[0] if rows else None

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

    # -- the reviews of records -----------------------------------------------------------------------------

    def add_review(self, record_id: str, *, status: str | None = None, reason: str | None = None,
                   note: str | None = None, reviewer: str | None = None) -> dict[str, Any]:
        """Move the record to `status` (closed needs a close `reason`; None keeps the current state
        and reason: a note alone never changes them), replace its note when one is given, and append
        the change to its trail. Returns the review written. `record_id` may be a unique prefix."""
        change = ReviewChange(status=status, reason=reason, note=note, reviewer=reviewer)
        change.check()
        record_id = self.resolve_id(record_id) or record_id
        with self._write() as conn:
            written = review_record(conn, record_id, change, now=utc_now())
        if written is None:
            raise InputError(f"No record {record_id!r}; list record ids with `logwarden records list`.")
        return written

    # -- feedback on the model's judgements (app/store/feedback.py) ----------------------------------

    def add_feedback(self, kind: str, target_id: str, *, verdict: str, reason: str | None = None,
                     note: str | None = None, reviewer: str | None = None) -> FeedbackInfo:
        """Accept or reject the model's judgement `kind` (record, story, triage) of `target_id` (an id or a
        unique prefix) with a reason (`schemas.feedback`; accept's default: correct). The row keeps the text
        judged and its sha256. An InputError (exit 2) for an unknown id, a bad verdict or reason, or a
        judgement the rules wrote (a rules-only record, a story by the rules)."""
        found = self.feedback_target(kind, target_id) or target_id
        with self._write() as conn:
            return feedback.add_feedback(conn, kind, found, verdict=verdict, reason=reason, note=note,
                                         reviewer=reviewer, now=utc_now())

    def list_feedback(self, kind: str | None = None, target_id: str | None = None, *,
                      limit: int = feedback.LIST_LIMIT) -> list[FeedbackInfo]:
        """The feedback rows, newest first: all, of one kind, or of one exact target id."""
        with self._read() as conn:
            return feedback.list_feedback(conn, kind=kind, target_id=target_id, limit=limit)

    def feedback_target(self, kind: str, given: str) -> str | None:
        """The full id of the record, incident or triage answer `given` names (a unique prefix); None: none."""
        if kind == "record":
            return self.resolve_id(given)
        if kind == "story":
            return self.incidents.resolve_id(given)
        if kind != "triage":
            return None  # add_feedback says what can be judged
        with self._read() as conn:
            return feedback.resolve_triage(conn, given)

    def add_triage_answer(self, *, snippet: str, answer: str, verdict: str, model: str | None = None,
                          record_ids: Sequence[str] = ()) -> str:
        """Keep the model's answer to a triage snippet (once: the same answer to the same snippet is one
        row), so that it can be judged later; returns its id (`tri-` and 16 hex digits)."""
        with self._write() as conn:
            return feedback.add_triage_answer(conn, snippet=snippet, answer=answer, verdict=verdict, model=model,
                                              record_ids=list(record_ids), now=utc_now())

    # -- baselines: forgetting and muting ---------------------------------------------------

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
        found: dict[str, Any] = {"url": shown_url(url), "dialect": url.get_backend_name(),
                                 "schema_version": version, "tables": counts}
        path = sqlite_file(url) if is_sqlite(url) else None
        if path is not None:
            found["path"] = str(path)
            found["file_size"] = sum(p.stat().st_size for p in _sqlite_files(path) if p.exists())
        return found

    def own_files(self) -> list[Path]:
        """The SQLite database's file and its companions (-wal, -shm, -journal), whether they exist
        now or not: never to be read as logs. None for another database or one in memory."""
        path = sqlite_file(self.engine.url) if is_sqlite(self.engine.url) else None
        return [*_sqlite_files(path), path.with_name(path.name + "-journal")] if path is not None else []

    # -- plumbing ----------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        with self._connection(write=True) as conn, conn.begin():
            yield conn


_HOST = socket.gethostname()[:200]


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
