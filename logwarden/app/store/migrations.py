"""Versioned schema migrations: a `schema_migrations` table and an ordered list of numbered steps.

Why not Alembic: the store has one owner and a handful of tables, and it must migrate itself on
`open_store()` from any process (CLI, watcher, UI) without a separate tool, ini file or script
folder. A step is a plain function of a `Connection`, written against its OWN frozen table
definitions (never the ORM classes, which describe only the latest shape), so step 1 still means
the same thing after step 7 exists. Rule for new steps: append, never edit an applied one.

Owns: the steps and the runner. Does not know about records, filters or the Store API.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Connection,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    insert,
    inspect,
    literal,
    select,
    text,
)

from logwarden.errors import StoreError, StoreInputError

Step = Callable[[Connection], None]


def _v1_metadata() -> MetaData:
    """The schema as first released (frozen: do not edit, add a step instead)."""
    md = MetaData()
    Table("sources", md,
          Column("path", Text, primary_key=True), Column("inode", Integer, primary_key=True, autoincrement=False),
          Column("offset", Integer, nullable=False), Column("line_no", Integer, nullable=False),
          Column("format", String(40)), Column("miner_state", Text), Column("updated_at", DateTime, nullable=False))
    Table("runs", md,
          Column("id", String(40), primary_key=True), Column("started_at", DateTime, nullable=False, index=True),
          Column("finished_at", DateTime), Column("command", String(200), nullable=False),
          Column("config", JSON, nullable=False), Column("metrics", JSON), Column("status", String(20), nullable=False))
    _v1_records(md)
    Table("evidence", md,
          Column("id", Integer, primary_key=True),
          Column("record_id", String(64), ForeignKey("records.id", ondelete="CASCADE"), nullable=False, index=True),
          Column("line_no", Integer, nullable=False), Column("text", Text, nullable=False))
    Table("windows", md,
          Column("id", Integer, primary_key=True), Column("source", Text, nullable=False),
          Column("inode", Integer, nullable=False), Column("line_start", Integer, nullable=False),
          Column("line_end", Integer, nullable=False), Column("line_count", Integer, nullable=False),
          Column("verdict", String(40), nullable=False), Column("record_ids", JSON, nullable=False),
          Column("run_id", String(40), index=True), Column("created_at", DateTime, nullable=False),
          Index("ux_windows_span", "source", "inode", "line_start", "line_end", unique=True))
    Table("errors", md,
          Column("id", Integer, primary_key=True), Column("run_id", String(40), index=True),
          Column("source", Text, nullable=False), Column("offset", Integer), Column("line_no", Integer),
          Column("stage", String(40), nullable=False), Column("message", Text, nullable=False),
          Column("created_at", DateTime, nullable=False))
    Table("reviews", md,
          Column("id", Integer, primary_key=True),
          Column("record_id", String(64), ForeignKey("records.id", ondelete="CASCADE"), nullable=False, index=True),
          Column("status", String(20), nullable=False), Column("note", Text), Column("reviewer", String(200)),
          Column("created_at", DateTime, nullable=False))
    return md


def _v1_records(md: MetaData) -> Table:
    text_cols = ("anomaly", "trace", "recommendation")
    nullable_text = ("host", "model", "adapter", "analyst_note", "raw_model_output", "llm_error")
    return Table(
        "records", md,
        Column("id", String(64), primary_key=True), Column("source", Text, nullable=False, index=True),
        *(Column(name, Integer, nullable=False) for name in ("inode", "line_start", "line_end", "line_count")),
        Column("first_ts", DateTime), Column("last_ts", DateTime, index=True),
        Column("risk_level", String(10), nullable=False), Column("risk_rank", Integer, nullable=False, index=True),
        Column("risk_score", Integer, nullable=False), Column("category", String(40), nullable=False, index=True),
        Column("technique_ids", Text, nullable=False),
        *(Column(name, JSON, nullable=False) for name in ("techniques", "indicators", "evidence", "detections")),
        *(Column(name, Text, nullable=False) for name in text_cols),
        *(Column(name, Text) for name in nullable_text),
        Column("decided_by", String(20), nullable=False), Column("prompt_version", String(40), nullable=False),
        Column("schema_version", String(20), nullable=False), Column("status", String(20), nullable=False, index=True),
        Column("created_at", DateTime, nullable=False), Column("updated_at", DateTime, nullable=False),
        Column("run_id", String(40), index=True), Column("engine_stats", JSON),
        Index("ix_records_risk_rank_last_ts", "risk_rank", "last_ts"),
    )


def _step_1_initial(conn: Connection) -> None:
    _v1_metadata().create_all(conn)


def _step_record_grounding(conn: Connection) -> None:
    """Record schema 2 (evidence-pinned findings): `ungrounded` lists what the model's text named that its
    digest lacks (removed from the text). Records stored before keep an empty list; they stay readable."""
    conn.execute(text("ALTER TABLE records ADD COLUMN ungrounded JSON NOT NULL DEFAULT '[]'"))


def _sources_v2(md: MetaData, name: str = "sources") -> Table:
    """Sources keyed by (path, inode, generation) and remembered by content (issue 16)."""
    return Table(
        name, md,
        Column("path", Text, primary_key=True),
        Column("inode", BigInteger, primary_key=True, autoincrement=False),
        Column("generation", Integer, primary_key=True, autoincrement=False),
        Column("offset", BigInteger, nullable=False), Column("line_no", BigInteger, nullable=False),
        Column("format", String(40)), Column("miner_state", Text),
        Column("fingerprint", String(64)), Column("fingerprint_len", Integer, nullable=False),
        Column("fingerprint_prefix", String(64)),
        Column("updated_at", DateTime, nullable=False))


def _step_source_identity(conn: Connection) -> None:
    """File identity by content: sources get a generation (a truncated file restarts at line 1
    as a new generation) and the fingerprint of what was read; windows carry the generation in
    their unique span; `watched_folders` remembers which folders a watcher has ever followed
    (only files that were there before that are "present at start"). PostgreSQL's 32-bit
    integers become 64-bit where inodes and byte offsets live (SQLite's already are)."""
    md = MetaData()
    old = _v1_metadata().tables["sources"]
    new = _sources_v2(md, "sources_v2")
    new.create(conn)
    columns = ["path", "inode", "offset", "line_no", "format", "miner_state", "updated_at"]
    conn.execute(insert(new).from_select(
        [*columns, "generation", "fingerprint_len"],
        select(*(old.c[name] for name in columns), literal(0), literal(0))))
    old.drop(conn)
    conn.execute(text("ALTER TABLE sources_v2 RENAME TO sources"))
    conn.execute(text("ALTER TABLE windows ADD COLUMN generation INTEGER NOT NULL DEFAULT 0"))
    conn.execute(text("DROP INDEX ux_windows_span"))
    conn.execute(text("CREATE UNIQUE INDEX ux_windows_span ON windows "
                      "(source, inode, generation, line_start, line_end)"))
    Table("watched_folders", md, Column("path", Text, primary_key=True),
          Column("first_watched_at", DateTime, nullable=False)).create(conn)
    if conn.dialect.name == "postgresql":
        for table, column in (("records", "inode"), ("windows", "inode"), ("errors", '"offset"')):
            conn.execute(text(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE BIGINT"))


def _step_run_owner(conn: Connection) -> None:
    """Runs remember the host and process that run them, so that a run whose process died
    (kill -9, a crash) can be marked `aborted` by the next start on that host."""
    conn.execute(text("ALTER TABLE runs ADD COLUMN host VARCHAR(200)"))
    conn.execute(text("ALTER TABLE runs ADD COLUMN pid INTEGER"))


def _step_baselines(conn: Connection) -> None:
    """Baselines of normal (issue 28): profile rows (kind, scope, key) → JSON that several
    watchers merge into, and the deviation refs an analyst muted."""
    md = MetaData()
    Table("baseline_profiles", md,
          Column("kind", String(20), primary_key=True), Column("scope", Text, primary_key=True),
          Column("key", Text, primary_key=True), Column("data", JSON, nullable=False),
          Column("clients", Integer, nullable=False), Column("updated_at", DateTime, nullable=False))
    Table("baseline_mutes", md,
          Column("ref", Text, primary_key=True), Column("note", Text),
          Column("created_at", DateTime, nullable=False))
    md.create_all(conn)


def _step_model_reviews(conn: Connection) -> None:
    """Model reviews (issue 33): prompts waiting for the model (`pending`) or answered (`done`,
    `failed`), most suspicious first, and the records each may change."""
    md = MetaData()
    Table("model_reviews", md,
          Column("id", String(40), primary_key=True), Column("status", String(10), nullable=False, index=True),
          Column("priority", Integer, nullable=False), Column("run_id", String(40), index=True),
          Column("item", JSON, nullable=False), Column("error", Text),
          Column("created_at", DateTime, nullable=False), Column("updated_at", DateTime, nullable=False))
    Table("model_review_records", md,
          Column("review_id", String(40), ForeignKey("model_reviews.id", ondelete="CASCADE"), primary_key=True),
          Column("record_id", String(64), primary_key=True, index=True))
    md.create_all(conn)


MARKER_TABLE = "logwarden_store"


def _step_store_marker(conn: Connection) -> None:
    """Issue 32. The store says it is logwarden's: `logwarden_store` holds `application =
    logwarden`, so no command migrates, writes or reads another application's database as one.
    Sources keep the bytes their fingerprint covers (`head`, at most 4 KiB): a file truncated in
    place to a part of what was read is then told from new content, and not read twice."""
    marker = Table(MARKER_TABLE, MetaData(), Column("key", String(40), primary_key=True),
                   Column("value", Text, nullable=False))
    marker.create(conn)
    conn.execute(insert(marker).values(key="application", value="logwarden"))
    conn.execute(text(f"ALTER TABLE sources ADD COLUMN head {LargeBinary().compile(dialect=conn.dialect)}"))


def _step_incidents(conn: Connection) -> None:
    """Incidents (issue 29): records grouped by shared pivots into attack stories, which record
    belongs to which incident, and the incidents' review trail."""
    md = MetaData()
    json_cols = ("stages", "next_steps", "cited", "ungrounded", "hosts", "tactics", "techniques", "entities",
                 "pivots")
    Table("incidents", md,
          Column("id", String(40), primary_key=True), Column("title", Text, nullable=False),
          Column("summary", Text, nullable=False),
          *(Column(name, JSON, nullable=False) for name in json_cols),
          Column("story_by", String(20), nullable=False), Column("story_key", String(64), nullable=False),
          Column("model", Text), Column("invented", Integer, nullable=False),
          Column("risk_level", String(10), nullable=False),
          Column("risk_rank", Integer, nullable=False, index=True), Column("category", String(40), nullable=False),
          Column("first_ts", DateTime), Column("last_ts", DateTime, index=True),
          Column("record_count", Integer, nullable=False),
          Column("status", String(20), nullable=False, index=True), Column("owner", String(200)),
          Column("analyst_note", Text),
          Column("created_at", DateTime, nullable=False), Column("updated_at", DateTime, nullable=False))
    Table("incident_records", md,
          Column("record_id", String(64), primary_key=True),
          Column("incident_id", String(40), ForeignKey("incidents.id", ondelete="CASCADE"), nullable=False,
                 index=True))
    Table("incident_reviews", md,
          Column("id", Integer, primary_key=True), Column("incident_id", String(40), nullable=False, index=True),
          Column("status", String(20), nullable=False), Column("owner", String(200)), Column("note", Text),
          Column("reviewer", String(200)), Column("created_at", DateTime, nullable=False))
    md.create_all(conn)


def _step_line_hashes(conn: Connection) -> None:
    """Issue 44. Resume by content: each committed line's hash (CRC-32 of its text, 4 bytes, in runs
    of consecutive lines), so a file truncated and appended to resumes at the first line that is not
    what was read; and the last read line's offset and hash (`tail_*`), which tell a file that still
    holds what was read from one cut and grown past the old end."""
    big = BigInteger().compile(dialect=conn.dialect)
    conn.execute(text(f"ALTER TABLE sources ADD COLUMN tail_offset {big}"))
    conn.execute(text(f"ALTER TABLE sources ADD COLUMN tail_hash {big}"))
    Table("source_lines", MetaData(),
          Column("path", Text, primary_key=True), Column("inode", BigInteger, primary_key=True, autoincrement=False),
          Column("generation", Integer, primary_key=True, autoincrement=False),
          Column("first_line", BigInteger, primary_key=True, autoincrement=False),
          Column("hashes", LargeBinary, nullable=False)).create(conn)


def _step_rejected_texts(conn: Connection) -> None:
    """Issue 38. The model's texts the gate (app/textgate.py) turned down: `rejected` maps a record's or
    an incident's field to why; that field kept the rules' text. Rows stored before hold an empty map."""
    for table in ("records", "incidents"):
        conn.execute(text(f"ALTER TABLE {table} ADD COLUMN rejected JSON NOT NULL DEFAULT '{{}}'"))


def _step_deviation_verdicts(conn: Connection) -> None:
    """Issue 38. The model's enumerated verdict on a baseline deviation (verdict, stage, category).
    Rows stored before hold an empty map: no verdict was asked then."""
    conn.execute(text("ALTER TABLE records ADD COLUMN verdict JSON NOT NULL DEFAULT '{}'"))


def _step_detector_state(conn: Connection) -> None:
    """Issue 44. Sources keep their detector's state (correlation counts per key within each rule's
    timespan, JSON), committed with their position: a burst split by a restart adds up. Rows stored
    before hold none: their next read starts with none, as before."""
    conn.execute(text("ALTER TABLE sources ADD COLUMN detector_state TEXT"))


def _step_deliveries(conn: Connection) -> None:
    """Issue 44. The delivery cursor: what each forwarding destination (`export --forward`) took, by record
    or incident id and how sure it is (`indexed`: the receiver acknowledged it; `accepted`: answered 2xx,
    no acknowledgement offered; `sent`: written, the transport cannot confirm; `uncertain`: the receiver
    may have it, no answer came), so a re-run sends only what no destination took."""
    Table("deliveries", MetaData(),
          Column("destination", Text, primary_key=True), Column("kind", String(20), primary_key=True),
          Column("item_id", String(64), primary_key=True), Column("state", String(12), nullable=False),
          Column("updated_at", DateTime, nullable=False)).create(conn)


def _step_rule_titles(conn: Connection) -> None:
    """Issue 45. Each loaded rule's title by its id (SigmaHQ's ids are UUIDs): the lists, a record's page
    and its JSON name the rules by title. Records stored before get their rules' titles once a run loads them."""
    Table("rule_titles", MetaData(), Column("rule_id", Text, primary_key=True),
          Column("title", Text, nullable=False)).create(conn)


# Issue 42: the review states before it → (status, close reason) after it.
SOC_STATUSES = {"new": ("open", None), "confirmed": ("in_progress", None),
                "false_positive": ("closed", "false_positive"), "resolved": ("closed", "true_positive")}


def _step_soc_review(conn: Connection) -> None:
    """Issue 42. Review states as SOC tools share them (Elastic Security's alert workflow, Splunk ES):
    open → acknowledged → in_progress → closed, closed with a reason (true_positive, benign_positive,
    false_positive, duplicate). Records and incidents gain `close_reason` and who reviewed them last,
    when (`reviewer`, `reviewed_at`, from their latest trail row); every trail row gains the state it
    left (`old_status`) and its reason, and a record's row names the incident whose review it came
    from (`incident_id`).

    The old states map as an analyst would read them:
    - new → open: nobody has looked at it.
    - confirmed → in_progress: someone judged it a real threat and has not closed it; in_progress
      (not acknowledged, which says only "seen") keeps that work is under way. The verdict itself
      waits for the close: SOC tools give a reason when closing only.
    - false_positive → closed, false_positive.
    - resolved → closed, true_positive: resolved meant a real finding was handled (the incident
      export already sent it as OCSF verdict True Positive).
    A trail row's `old_status` is the state of the row before it for the same record or incident
    (open for the first)."""
    when = DateTime().compile(dialect=conn.dialect)
    for table in ("records", "incidents"):
        for column, kind in (("close_reason", "VARCHAR(20)"), ("reviewer", "VARCHAR(200)"), ("reviewed_at", when)):
            conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} {kind}"))
    conn.execute(text("ALTER TABLE reviews ADD COLUMN incident_id VARCHAR(40)"))
    for table in ("reviews", "incident_reviews"):
        conn.execute(text(f"ALTER TABLE {table} ADD COLUMN old_status VARCHAR(20)"))
        conn.execute(text(f"ALTER TABLE {table} ADD COLUMN close_reason VARCHAR(20)"))
    for table in ("records", "incidents", "reviews", "incident_reviews"):
        for old, (new, reason) in SOC_STATUSES.items():
            conn.execute(text(f"UPDATE {table} SET status = :new, close_reason = :reason WHERE status = :old"),
                         {"new": new, "reason": reason, "old": old})
    for table, key, owner in (("reviews", "record_id", "records"), ("incident_reviews", "incident_id", "incidents")):
        _fill_old_status(conn, table, key)
        for column in ("reviewer", "created_at"):
            target = "reviewed_at" if column == "created_at" else column
            conn.execute(text(f"UPDATE {owner} SET {target} = (SELECT t.{column} FROM {table} t "
                              f"WHERE t.{key} = {owner}.id ORDER BY t.id DESC LIMIT 1)"))


def _fill_old_status(conn: Connection, table: str, key: str) -> None:
    before: dict[str, str] = {}
    rows = conn.execute(text(f"SELECT id, {key}, status FROM {table} ORDER BY id")).all()
    for row_id, item, status in rows:
        conn.execute(text(f"UPDATE {table} SET old_status = :old WHERE id = :id"),
                     {"old": before.get(item, "open"), "id": row_id})
        before[item] = status


def _step_model_feedback(conn: Connection) -> None:
    """Issue 42. An analyst's accept or reject of the model's judgements, with a reason of a fixed set
    (schemas/feedback.py): a record's verdict and text, an incident's story, a triage answer. Each row
    keeps the text it judged and that text's sha256, so it stays tied to it when the model rewrites the
    text later, and (a triage snippet) the lines judged. `triage_answers` keeps what the model answered
    to a snippet, so the answer can be judged after the command that asked ended."""
    md = MetaData()
    Table("triage_answers", md,
          Column("id", String(40), primary_key=True), Column("snippet", Text, nullable=False),
          Column("snippet_sha256", String(64), nullable=False, index=True), Column("answer", Text, nullable=False),
          Column("verdict", String(40), nullable=False), Column("model", Text),
          Column("record_ids", JSON, nullable=False), Column("created_at", DateTime, nullable=False))
    Table("model_feedback", md,
          Column("id", Integer, primary_key=True), Column("kind", String(10), nullable=False),
          Column("target_id", String(64), nullable=False), Column("judged_sha256", String(64), nullable=False),
          Column("judged", Text, nullable=False), Column("context", Text), Column("model", Text),
          Column("verdict", String(10), nullable=False), Column("reason", String(30), nullable=False),
          Column("note", Text), Column("reviewer", String(200)), Column("created_at", DateTime, nullable=False),
          Index("ix_model_feedback_target", "kind", "target_id"))
    md.create_all(conn)


STEPS: tuple[tuple[int, str, Step], ...] = (
    (1, "initial schema", _step_1_initial),
    (2, "records: ungrounded entities (record schema 2)", _step_record_grounding),
    # issue 16 (separate steps, so that other branches' steps can be ordered around them)
    (3, "source identity: generations, fingerprints, watched folders", _step_source_identity),
    (4, "run owner: host and pid", _step_run_owner),
    (5, "baselines: profiles and muted deviations", _step_baselines),
    (6, "model reviews: what waits for the model, and the records it may change", _step_model_reviews),
    # issue 32
    (9, "store marker: the database is logwarden's; sources keep their head", _step_store_marker),
    # issue 29
    (10, "incidents: grouped records, their stories and reviews", _step_incidents),
    # issue 44
    (11, "sources: line hashes and the last line read, to resume by content", _step_line_hashes),
    # issue 38
    (12, "records and incidents: the model's texts the gate rejected", _step_rejected_texts),
    (13, "records: the model's verdict on a baseline deviation", _step_deviation_verdicts),
    # issue 44
    (14, "sources: the detector's state, saved with the position", _step_detector_state),
    (15, "deliveries: what each forwarding destination took", _step_deliveries),
    # issue 45
    (18, "rule titles: what a person reads for a rule's id", _step_rule_titles),
    # issue 42
    (20, "review states: open, acknowledged, in progress, closed with a reason; the trail's old state",
     _step_soc_review),
    (21, "model feedback: accept or reject the model's judgements; triage answers kept", _step_model_feedback),
)
LATEST_VERSION = STEPS[-1][0]

_versions = MetaData()
_schema_migrations = Table(
    "schema_migrations", _versions,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("name", String(200), nullable=False), Column("applied_at", DateTime, nullable=False),
)


def current_version(conn: Connection) -> int:
    """0 for an empty database."""
    return max(applied_versions(conn), default=0)


def applied_versions(conn: Connection) -> set[int]:
    if not inspect(conn).has_table("schema_migrations"):
        return set()
    return set(conn.execute(select(_schema_migrations.c.version)).scalars().all())


def missing_versions(conn: Connection) -> list[int]:
    """The known steps this database lacks. Not only those above its highest: branches number their
    steps apart (7 and 8 were never merged), so a store may hold 15 and not 14 until 14 is merged."""
    have = applied_versions(conn)
    return [version for version, _, _ in STEPS if version not in have]


def store_kind(conn: Connection) -> str:
    """`logwarden` (the marker, or a store from before it: `schema_migrations` whose first step is
    logwarden's), `empty` (no tables at all) or `foreign` (another application's database)."""
    inspector = inspect(conn)
    names = set(inspector.get_table_names())
    if not names:
        return "empty"
    if MARKER_TABLE in names:
        return "logwarden"
    if "schema_migrations" in names and {"version", "name"} <= {c["name"] for c in inspector.get_columns(
            "schema_migrations")}:
        first = conn.execute(select(_schema_migrations.c.name).where(_schema_migrations.c.version == 1)).scalar()
        if first == STEPS[0][1]:
            return "logwarden"
    return "foreign"


def foreign_error(url: str, conn: Connection) -> StoreInputError:
    tables = sorted(inspect(conn).get_table_names())
    shown = ", ".join(tables[:6]) + (", …" if len(tables) > 6 else "")
    return StoreInputError(f"{url} is another application's database (tables: {shown}), not a logwarden store; "
                           "logwarden neither reads nor changes it. Pass another --db (or LOGWARDEN_DB).")


MIGRATION_LOCK = 0x6C6F6777  # "logw": PostgreSQL advisory lock id that serialises migrations


def migrate(conn: Connection, *, url: str = "the database") -> list[int]:
    """Apply the missing steps in order inside the caller's transaction; returns the versions applied.
    Another application's database (`store_kind` foreign) is refused, untouched.

    Several processes may open a fresh database at once (watchers on several hosts): SQLite's
    write lock (BEGIN IMMEDIATE) serialises them; on PostgreSQL a transaction-scoped advisory
    lock does, so the second one finds the steps applied and does nothing."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
    if store_kind(conn) == "foreign":
        raise foreign_error(url, conn)
    _versions.create_all(conn)
    have = current_version(conn)
    if have > LATEST_VERSION:
        raise StoreError(f"The database is at schema version {have}, newer than this logwarden "
                         f"(knows up to {LATEST_VERSION}). Upgrade logwarden or use another --db.")
    applied = []
    missing = set(missing_versions(conn))
    for version, name, step in STEPS:
        if version in missing:
            step(conn)
            conn.execute(insert(_schema_migrations).values(
                version=version, name=name, applied_at=datetime.now(timezone.utc).replace(tzinfo=None)))
            applied.append(version)
    return applied
