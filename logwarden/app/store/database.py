"""Turn a SQLAlchemy URL into a ready `Engine`: parent folders, SQLite pragmas, transaction mode.

SQLite (the embedded default) and PostgreSQL (`postgresql+psycopg://user@host/db`, psycopg 3: a
store shared by watchers on several hosts) are the tested dialects.

SQLite is opened by several processes at once (the watcher writes while the UI reads), so every
connection gets WAL (readers never block the writer), `synchronous=NORMAL` (durable at each WAL
checkpoint, safe against corruption, much faster than FULL), foreign keys and a busy timeout.
Write transactions start with `BEGIN IMMEDIATE`: a deferred transaction that reads first and
then writes fails at once with SQLITE_BUSY when another process committed in between, and the
busy timeout does not help it; taking the write lock up front makes writers queue instead.

A read-only engine (`readonly=True`, for `db info`) creates nothing: no folder, no file, and
SQLite is opened with `mode=ro`, so not even the WAL setting is written.

Owns: engine creation and the BEGIN hook. Does not know about tables or records.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from logwarden.app.safetext import clean
from logwarden.errors import StoreInputError

BUSY_TIMEOUT_MS = 30_000
WRITE_OPTION = "logwarden_write"


# A URL's scheme (`sqlite:`, `postgresql+psycopg:`); one letter is a Windows drive (`C:\\logs\\lw.db`), a path.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")


def store_url(text: str) -> str:
    """`--db` / `LOGWARDEN_DB` as given: a URL as it is; a path (`./lw.db`, `/abs/lw.db`, `~/lw.db`) as the
    URL of that SQLite file, made absolute (the UI's server and the printed next commands get the same
    file whatever their folder). The one place an option becomes a store URL: every opening parses
    through it; what the file holds is checked when it is opened (another application's is refused)."""
    if _SCHEME.match(text):
        return text
    return f"sqlite:///{Path(text).expanduser().resolve()}"


def parse_url(url: str) -> URL:
    try:
        return make_url(store_url(url))
    except ArgumentError as exc:
        raise StoreInputError(f"Bad database URL {url!r}: {exc}. Use e.g. sqlite:////abs/path/logwarden.db "
                         "or postgresql+psycopg://user@host/db (set LOGWARDEN_DB or --db).") from exc


def is_sqlite(url: URL) -> bool:
    return url.get_backend_name() == "sqlite"


def sqlite_file(url: URL) -> Path | None:
    """The database file of a SQLite URL; None for in-memory databases."""
    database = url.database or ""
    if database.startswith("file:"):  # SQLite URI syntax (the read-only engine uses it)
        database = database[len("file:"):].split("?", 1)[0]
    if database in ("", ":memory:") or url.query.get("mode") == "memory":
        return None
    return Path(database).expanduser()


def make_engine(url_text: str, *, readonly: bool = False) -> Engine:
    url = parse_url(url_text)
    if is_sqlite(url):
        url = _readonly_sqlite(url) if readonly else url
        if not readonly:
            _prepare_sqlite_dir(url)
    try:
        engine = create_engine(url, **_engine_kwargs(url))
    except (ArgumentError, NoSuchModuleError, ImportError) as exc:
        raise StoreInputError(f"Cannot open database {url.render_as_string(hide_password=True)!r}: {exc}. "
                              "Check the URL's driver name and that its Python driver is installed "
                              "(PostgreSQL: postgresql+psycopg://…, pip install 'logwarden[postgresql]').") from exc
    if is_sqlite(url):
        _install_sqlite_hooks(engine, readonly=readonly)
    return engine


def require_file(url_text: str) -> None:
    """A SQLite URL must name a database file that exists (commands that only read create none)."""
    url = parse_url(url_text)
    path = sqlite_file(url) if is_sqlite(url) else None
    if path is not None and not path.is_file():
        raise _missing(path)


def _missing(path: Path) -> StoreInputError:
    return StoreInputError(f"No database at {path}: nothing to show. It is created by "
                           "`logwarden analyze`, `watch` or `triage` (or pass another --db).")


def _readonly_sqlite(url: URL) -> URL:
    """The same file opened read-only through SQLite's URI syntax; it must exist. Without a WAL
    file beside it (no writer has it open) it is opened `immutable`, so that SQLite does not
    create its -wal/-shm companions either."""
    path = sqlite_file(url)
    if path is None:
        return url
    if not path.is_file():
        raise _missing(path)
    quiet = not path.with_name(path.name + "-wal").exists()
    mode = {"immutable": "1"} if quiet else {"mode": "ro"}
    return url.set(database=f"file:{path.resolve()}", query={**url.query, **mode, "uri": "true"})


def _engine_kwargs(url: URL) -> dict[str, Any]:
    # ensure_ascii off: stored JSON keeps unicode as is, so free-text LIKE search finds "пользователь";
    # default=str: run metrics/config may carry paths or datetimes, which must not abort the run.
    # clean: a lone surrogate (which no driver encodes) is U+FFFD, not a failed transaction.
    common = {"json_serializer": lambda obj: clean(json.dumps(obj, ensure_ascii=False, default=str))}
    if not is_sqlite(url):
        return {**common, "pool_pre_ping": True}
    # check_same_thread off: Streamlit serves a session from several threads; the pool hands
    # each thread its own connection at a time, so the sqlite3 object is never shared concurrently.
    return {**common, "connect_args": {"timeout": BUSY_TIMEOUT_MS / 1000, "check_same_thread": False}}


def _prepare_sqlite_dir(url: URL) -> None:
    path = sqlite_file(url)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreInputError(f"Cannot create the database folder {path.parent}: {exc.strerror}. "
                         "Choose a writable location with --db or LOGWARDEN_DB / LOGWARDEN_HOME.") from exc


def _install_sqlite_hooks(engine: Engine, *, readonly: bool = False) -> None:
    pragmas = [f"busy_timeout={BUSY_TIMEOUT_MS}"]
    if not readonly:
        pragmas = ["journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON", *pragmas]

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Autocommit at the driver level so that SQLAlchemy's "begin" hook below decides how
        # each transaction starts (pysqlite's own implicit BEGIN would always be DEFERRED).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in pragmas:
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(WRITE_OPTION) and not readonly
        mode = "IMMEDIATE" if write else "DEFERRED"
        conn.exec_driver_sql(f"BEGIN {mode}")
