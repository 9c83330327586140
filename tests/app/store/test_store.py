"""The store on SQLite and on a real PostgreSQL server (every test that is not about SQLite's file
runs on both): migrations, pragmas, idempotent upserts, crash-safe transactions, filters,
aggregates (checked against a plain-Python computation), reviews, runs, errors, concurrency."""

from __future__ import annotations

import multiprocessing
import random
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest
from _store_helpers import BASE_TS, make_record
from sqlalchemy import insert, inspect, text

from logwarden.app.events import ErrorRow
from logwarden.app.store import LATEST_VERSION, RecordFilter, WindowRow, aggregates, migrations, open_store, writes
from logwarden.app.store.database import make_engine
from logwarden.app.store.tables import Base
from logwarden.errors import InputError, StoreError, StoreInputError
from logwarden.schemas import CATEGORIES, RISK_LEVELS, Indicators, Technique, risk_rank
from logwarden.schemas.record import OPEN_STATUSES, STATUSES


@pytest.fixture()
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'nested' / 'dir' / 'logwarden.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, sqlite_url):
    if request.param == "sqlite":
        return sqlite_url
    return request.getfixturevalue("pg_cluster").create_database()


@pytest.fixture()
def store(db_url):
    with open_store(db_url) as s:
        yield s


@pytest.fixture()
def sqlite_store(sqlite_url):
    with open_store(sqlite_url) as s:
        yield s


# -- opening and migrating -------------------------------------------------------------------


def test_open_creates_parent_dirs_and_migrates(tmp_path, sqlite_url):
    store = open_store(sqlite_url)
    assert (tmp_path / "nested" / "dir" / "logwarden.db").exists()
    assert store.info()["schema_version"] == LATEST_VERSION
    assert store.migrate() == []  # a second migration applies nothing
    store.close()


def test_sqlite_pragmas_on_every_connection(sqlite_store):
    with sqlite_store.engine.connect() as conn:
        pragma = lambda name: conn.exec_driver_sql(f"PRAGMA {name}").scalar()  # noqa: E731
        assert pragma("journal_mode") == "wal"
        assert pragma("synchronous") == 1  # NORMAL
        assert pragma("foreign_keys") == 1
        assert pragma("busy_timeout") >= 1000


def test_orm_tables_match_the_migrated_schema(store):
    """The frozen migration steps and the ORM classes must describe the same tables."""
    inspector = inspect(store.engine)
    for name, table in Base.metadata.tables.items():
        db_cols = {c["name"]: c["nullable"] for c in inspector.get_columns(name)}
        orm_cols = {c.name: c.nullable for c in table.columns}
        assert db_cols == orm_cols, name
        db_indexes = {(i["name"], bool(i["unique"])) for i in inspector.get_indexes(name)}
        orm_indexes = {(i.name, bool(i.unique)) for i in table.indexes}
        assert db_indexes == orm_indexes, name


def test_bad_url_raises_store_error(tmp_path, monkeypatch):
    with pytest.raises(StoreError, match="Bad database URL"):
        open_store("sqlite:not-a-url")  # a scheme, then no URL
    monkeypatch.chdir(tmp_path)
    open_store("this is a path").close()  # no scheme: a SQLite file's path (issue 45)
    assert (tmp_path / "this is a path").is_file()
    with pytest.raises(StoreError, match="driver"):
        open_store("nosuchdialect://user@host/db")


def test_unwritable_location_raises_store_error(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="Cannot create the database folder"):
        open_store(f"sqlite:///{blocker / 'sub' / 'db.sqlite'}")


def test_database_newer_than_code_is_refused(db_url):
    store = open_store(db_url)
    with store.engine.begin() as conn:
        conn.execute(text("INSERT INTO schema_migrations VALUES (:v, 'future', '2030-01-01 00:00:00')"),
                     {"v": LATEST_VERSION + 1})
    store.close()
    with pytest.raises(StoreError, match="newer than this logwarden"):
        open_store(db_url)


def _store_at(url: str, top: int) -> None:
    """A store as a logwarden that knew the steps up to `top` made it."""
    engine = make_engine(url)
    with engine.begin() as conn:
        migrations._versions.create_all(conn)
        for version, name, step in migrations.STEPS:
            if version <= top:
                step(conn)
                conn.execute(insert(migrations._schema_migrations).values(
                    version=version, name=name, applied_at=datetime(2026, 12, 1)))
    engine.dispose()


def test_a_store_at_13_gets_the_delivery_cursor_step_15_without_14(db_url):
    _store_at(db_url, 13)
    store = open_store(db_url)
    assert store.applied == [v for v, _, _ in migrations.STEPS if v > 13] and 15 in store.applied
    store.deliveries.mark("syslog+tcp://siem:514", "records", ["a", "b"], "sent")
    assert store.deliveries.states("syslog+tcp://siem:514", "records") == {"a": "sent", "b": "sent"}
    store.close()


def test_a_step_numbered_below_the_highest_applied_is_applied_when_it_arrives(db_url, monkeypatch):
    """Branches number their steps apart: a store migrated to the latest step before
    a lower-numbered one was merged (7: a gap in the numbers) still gets it."""
    open_store(db_url).close()

    def step_7(conn):
        conn.execute(text("CREATE TABLE other_branch (id INTEGER PRIMARY KEY)"))

    steps = tuple(sorted((*migrations.STEPS, (7, "another branch's step", step_7))))
    monkeypatch.setattr(migrations, "STEPS", steps)
    with pytest.raises(StoreInputError, match="lacking this logwarden's step"):
        open_store(db_url, readonly=True)
    store = open_store(db_url)
    assert store.applied == [7]
    assert "other_branch" in inspect(store.engine).get_table_names()
    store.close()
    open_store(db_url, readonly=True).close()


# -- records ---------------------------------------------------------------------------------


def test_record_round_trips_unchanged(store):
    record = make_record(anomaly="Ünïcödé 用户 \"quoted\" | pipes = equals\nnewline",
                         indicators=Indicators(users=["пользователь"], ips=["2001:db8::1"]),
                         engine_stats={"prompt_tokens": 412, "ttft_s": 0.8}, run_id="r1")
    store.upsert_records([record])
    assert store.get_record(record.id) == record
    assert store.get_record("missing") is None


def test_naive_timestamps_are_read_as_local_time_in_utc(store):
    naive = datetime(2026, 11, 29, 12, 0, 0)
    store.upsert_records([make_record(first_ts=naive, last_ts=naive)])
    got = store.query_records()[0].last_ts
    assert got.tzinfo is not None and got == naive.astimezone()


def test_upsert_is_idempotent_and_keeps_review_state(store):
    record = make_record()
    store.upsert_records([record])
    store.add_review(record.id, status="acknowledged", note="seen in VPN logs too", reviewer="ana")
    created = store.get_record(record.id).created_at

    reanalysed = record.model_copy(update={"anomaly": "updated text", "status": "open", "analyst_note": None,
                                           "created_at": created + timedelta(days=1)})
    store.upsert_records([reanalysed, reanalysed])

    assert store.count_records() == 1
    got = store.get_record(record.id)
    assert got.anomaly == "updated text"
    assert (got.status, got.analyst_note, got.created_at) == ("acknowledged", "seen in VPN logs too", created)
    assert store.info()["tables"]["evidence"] == len(record.evidence.exemplars)


def test_evidence_rows_follow_the_record(store):
    record = make_record()
    store.upsert_records([record])
    fewer = record.model_copy(update={"evidence": record.evidence.model_copy(update={"exemplars": []})})
    store.upsert_records([fewer])
    assert store.info()["tables"]["evidence"] == 0


def test_generic_upsert_fallback_behaves_like_on_conflict(store, monkeypatch):
    monkeypatch.setattr(writes, "_DIALECT_INSERTS", {})
    record = make_record()
    store.upsert_records([record, make_record(line_start=40, line_end=45)])
    store.add_review(record.id, status="closed", reason="true_positive", reviewer="bo")
    store.upsert_records([record.model_copy(update={"risk_level": "critical", "risk_score": 95})])
    got = store.get_record(record.id)
    assert store.count_records() == 2
    assert (got.risk_level, got.status, got.close_reason) == ("critical", "closed", "true_positive")


# -- the transaction -------------------------------------------------------------------------


def test_transaction_commits_records_and_offset_together(store):
    with store.transaction() as tx:
        tx.upsert_records([make_record()])
        tx.set_source("/var/log/auth.log", 1234, offset=4096, line_no=29, format="syslog")
        tx.add_windows([WindowRow("/var/log/auth.log", 1234, 10, 29, 20, "brute_force", [make_record().id])])
    assert store.count_records() == 1
    assert store.get_source("/var/log/auth.log", 1234).offset == 4096


def test_exception_inside_transaction_rolls_back_records_and_offset(store):
    store.set_source("/var/log/auth.log", 1234, offset=100, line_no=3)
    with pytest.raises(RuntimeError, match="crash"):
        with store.transaction() as tx:
            tx.upsert_records([make_record()])
            tx.set_source("/var/log/auth.log", 1234, offset=4096, line_no=29)
            tx.add_errors([ErrorRow(source="/var/log/auth.log", offset=5, stage="parse", message="x")],
                          run_id=None)
            raise RuntimeError("crash between the batch and the commit")
    assert store.count_records() == 0
    assert store.list_errors() == []
    state = store.get_source("/var/log/auth.log", 1234)
    assert (state.offset, state.line_no) == (100, 3)


def test_set_source_keeps_format_and_miner_state_when_not_given(store):
    store.set_source("/a.log", 7, offset=10, line_no=1, format="access", miner_state='{"clusters": []}')
    store.set_source("/a.log", 7, offset=20, line_no=2)
    state = store.get_source("/a.log", 7)
    assert (state.offset, state.line_no, state.format, state.miner_state) == (20, 2, "access", '{"clusters": []}')
    assert store.get_source("/a.log", 8) is None  # rotated file: new inode, new state
    assert [(s.path, s.inode) for s in store.list_sources()] == [("/a.log", 7)]


def test_a_real_miner_state_round_trips(store):
    """Drain3's snapshot (base64 bytes) comes back usable on every dialect (PostgreSQL once turned
    it into bytea text, and the watcher died restoring it)."""
    from logwarden.app.mine import SourceMiner

    miner = SourceMiner()
    ids = [miner.add(f"Failed password for root from 10.0.0.{i} port {i} ssh2") for i in range(20)]
    store.set_source("/var/log/auth.log", 9, offset=1, line_no=20, miner_state=miner.state())
    again = SourceMiner(store.get_source("/var/log/auth.log", 9).miner_state)
    assert again.template(ids[0]) == miner.template(ids[0]) and again.cluster_count == miner.cluster_count


def test_generations_of_one_file_are_separate_sources_and_windows(store):
    for generation, lines in ((0, 30), (1, 12)):
        with store.transaction() as tx:
            tx.set_source("/var/log/app.log", 5, generation=generation, offset=lines * 10, line_no=lines,
                          fingerprint=f"{generation:064x}", fingerprint_len=100)
            tx.add_windows([WindowRow(source="/var/log/app.log", inode=5, generation=generation, line_start=1,
                                      line_end=lines, line_count=lines, verdict="benign")])
    assert store.get_source("/var/log/app.log", 5).generation == 1  # the latest
    assert store.get_source("/var/log/app.log", 5, generation=0).line_no == 30
    assert [(w.generation, w.line_end) for w in store.list_windows(source="/var/log/app.log")] == [(0, 30), (1, 12)]
    assert [s.path for s in store.list_sources(under=["/var/log"])] == ["/var/log/app.log"] * 2
    assert store.list_sources(under=["/var/lo"]) == []  # a folder, not a name prefix


def test_watched_folders_are_remembered_once(store):
    for _ in range(2):
        with store.transaction() as tx:
            tx.add_watched_folders(["/var/log", "/srv/logs"])
    assert store.watched_folders() == ["/srv/logs", "/var/log"]


def test_text_with_nul_is_stored_on_every_dialect(store):
    store.add_errors([ErrorRow(source="/tmp/x\x00y", offset=0, stage="ingest", message="bad \x00 byte")])
    record = make_record(anomaly="a\x00b")
    store.upsert_records([record])
    assert store.get_record(record.id).anomaly in ("a\x00b", "ab")
    assert store.list_errors()[0].message in ("bad \x00 byte", "bad  byte")


def test_windows_are_idempotent_per_span(store):
    row = WindowRow("/a.log", 7, 1, 100, 100, "benign", [], "run-1")
    store.add_windows([row])
    store.add_windows([WindowRow("/a.log", 7, 1, 100, 100, "brute_force", ["abc"], "run-2"),
                       WindowRow("/a.log", 7, 101, 150, 50, "benign")])
    windows = store.list_windows(source="/a.log")
    assert [(w.line_start, w.verdict, w.record_ids, w.run_id) for w in windows] == [
        (1, "brute_force", ["abc"], "run-2"), (101, "benign", [], None)]
    assert store.kpis()["lines_analysed"] == 150


# -- queries ---------------------------------------------------------------------------------


def _dataset(n: int = 240, seed: int = 7) -> list:
    rng = random.Random(seed)
    ips = [f"198.51.100.{i}" for i in range(6)]
    users = ["root", "admin", "deploy", "svc_web", "100%_real"]
    techniques = [Technique(id="T1110", tactic="Credential Access"), Technique(id="T1110.001", tactic="Credential Access"),
                  Technique(id="T1190", tactic="Initial Access"), Technique(id="T1059.004", tactic="Execution")]
    records = []
    for i in range(n):
        level = rng.choice(RISK_LEVELS)
        records.append(make_record(
            source=rng.choice(["/var/log/auth.log", "/var/log/nginx/access.log", "/logs/sysmon.json"]),
            line_start=i * 10 + 1, line_end=i * 10 + 10, risk_level=level, category=rng.choice(CATEGORIES),
            status=rng.choice(STATUSES),
            first_ts=BASE_TS + timedelta(minutes=37 * i), last_ts=BASE_TS + timedelta(minutes=37 * i + 5),
            techniques=rng.sample(techniques, rng.randint(0, 2)),
            indicators=Indicators(ips=rng.sample(ips, rng.randint(0, 3)), users=rng.sample(users, rng.randint(0, 2))),
            anomaly=f"event {i}", run_id=rng.choice(["run-a", "run-b"])))
    return records


@pytest.fixture()
def loaded(store):
    records = _dataset()
    store.upsert_records(records)
    return store, records


def _expect(records, keep) -> list[str]:
    return sorted(r.id for r in records if keep(r))


FILTER_CASES = [
    (RecordFilter(min_risk="high"), lambda r: risk_rank(r.risk_level) >= 3),
    (RecordFilter(categories=["brute_force", "web_attack"]), lambda r: r.category in ("brute_force", "web_attack")),
    (RecordFilter(sources=["/logs/sysmon.json"]), lambda r: r.source == "/logs/sysmon.json"),
    (RecordFilter(statuses=["open", "acknowledged"]), lambda r: r.status in ("open", "acknowledged")),
    (RecordFilter(technique="T1110"), lambda r: any(t.id.split(".")[0] == "T1110" for t in r.techniques)),
    (RecordFilter(technique="T1110.001"), lambda r: any(t.id == "T1110.001" for t in r.techniques)),
    (RecordFilter(technique="T111"), lambda r: False),
    (RecordFilter(text="198.51.100.3"), lambda r: "198.51.100.3" in r.indicators.ips),
    (RecordFilter(text="100%_real"), lambda r: "100%_real" in r.indicators.users),
    (RecordFilter(text="%"), lambda r: "100%_real" in r.indicators.users),
    (RecordFilter(text="EVENT 12"), lambda r: "event 12" in r.anomaly),
    (RecordFilter(run_id="run-b"), lambda r: r.run_id == "run-b"),
    (RecordFilter(since=BASE_TS + timedelta(hours=30), until=BASE_TS + timedelta(hours=60)),
     lambda r: BASE_TS + timedelta(hours=30) <= r.last_ts <= BASE_TS + timedelta(hours=60)),
    (RecordFilter(min_risk="medium", categories=["benign", "reconnaissance"], statuses=["open"]),
     lambda r: risk_rank(r.risk_level) >= 2 and r.category in ("benign", "reconnaissance") and r.status == "open"),
]


@pytest.mark.parametrize(("filters", "keep"), FILTER_CASES)
def test_filters_select_exactly_the_matching_records(loaded, filters, keep):
    store, records = loaded
    got = sorted(r.id for r in store.query_records(filters, limit=10_000))
    assert got == _expect(records, keep)
    assert store.count_records(filters) == len(got)


def test_since_accepts_other_timezones(loaded):
    store, records = loaded
    cut = BASE_TS + timedelta(hours=100)
    in_plus8 = cut.astimezone(timezone(timedelta(hours=8)))
    assert store.count_records(RecordFilter(since=in_plus8)) == len(_expect(records, lambda r: r.last_ts >= cut))


def test_paging_covers_every_record_once_in_order(loaded):
    store, records = loaded
    pages = [store.query_records(order_by="risk", limit=25, offset=o) for o in range(0, 250, 25)]
    seen = [r for page in pages for r in page]
    assert sorted(r.id for r in seen) == sorted(r.id for r in records)
    ranks = [risk_rank(r.risk_level) for r in seen]
    assert ranks == sorted(ranks, reverse=True)
    oldest_first = store.query_records(order_by="last_ts", descending=False, limit=3)
    assert [r.last_ts for r in oldest_first] == sorted(r.last_ts for r in records)[:3]


def test_unknown_sort_key_and_level_are_input_errors(store):
    with pytest.raises(InputError, match="Cannot sort by"):
        store.query_records(order_by="anomaly; DROP TABLE records")
    with pytest.raises(InputError, match="Unknown risk level"):
        store.count_records(RecordFilter(min_risk="severe"))


# -- aggregates ------------------------------------------------------------------------------

AGG_FILTERS = [RecordFilter(), RecordFilter(min_risk="medium", sources=["/var/log/auth.log"])]


def _selected(records, f: RecordFilter):
    return [r for r in records if (f.min_risk is None or risk_rank(r.risk_level) >= risk_rank(f.min_risk))
            and (not f.sources or r.source in f.sources)]


@pytest.mark.parametrize("filters", AGG_FILTERS)
def test_counts_by_level_and_category(loaded, filters):
    store, records = loaded
    chosen = _selected(records, filters)
    by_level = Counter(r.risk_level for r in chosen)
    assert store.counts_by_level(filters) == {lvl: by_level.get(lvl, 0) for lvl in RISK_LEVELS}
    by_category = store.counts_by_category(filters)
    assert by_category == dict(Counter(r.category for r in chosen))
    assert list(by_category.values()) == sorted(by_category.values(), reverse=True)


@pytest.mark.parametrize("bucket", ["hour", "day"])
@pytest.mark.parametrize("fallback", [False, True])
def test_risk_over_time(loaded, monkeypatch, bucket, fallback):
    store, records = loaded
    if fallback:
        monkeypatch.setattr(aggregates, "_bucket_dialect", lambda conn: "other")
    trunc = (lambda t: t.replace(minute=0, second=0)) if bucket == "hour" else \
        (lambda t: t.replace(hour=0, minute=0, second=0))
    expected = Counter((trunc(r.last_ts), r.risk_level) for r in records)
    rows = store.risk_over_time(bucket=bucket)
    assert {(row.bucket, row.level): row.count for row in rows} == dict(expected)
    assert [row.bucket for row in rows] == sorted(row.bucket for row in rows)


@pytest.mark.parametrize("fallback", [False, True])
@pytest.mark.parametrize("filters", AGG_FILTERS)
def test_top_indicators_and_techniques(loaded, monkeypatch, fallback, filters):
    store, records = loaded
    if fallback:
        monkeypatch.setattr(aggregates, "_has_json_each", lambda conn: False)
    chosen = _selected(records, filters)
    ips = Counter(ip for r in chosen for ip in r.indicators.ips)
    top = store.top_indicators(filters, kind="ips", limit=3)
    assert [(t.value, t.count) for t in top] == sorted(ips.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    techniques = Counter((t.id, t.tactic) for r in chosen for t in r.techniques)
    got = {(t.technique, t.tactic): t.count for t in store.technique_counts(filters)}
    assert got == dict(techniques)


def test_unknown_indicator_kind(store):
    with pytest.raises(InputError, match="indicator kind"):
        store.top_indicators(kind="passwords")


def test_kpis(loaded):
    store, records = loaded
    run = store.start_run(command="analyze", config={})
    store.set_source("/var/log/auth.log", 1234, offset=1, line_no=1)
    kpis = store.kpis()
    open_high = [r for r in records if r.risk_level in ("high", "critical") and r.status in OPEN_STATUSES]
    assert kpis["records"] == len(records)
    assert kpis["open_high_critical"] == len(open_high)
    assert kpis["sources"] == len({r.source for r in records})
    assert kpis["tracked_sources"] == 1
    assert kpis["last_run"]["id"] == run
    assert kpis["records_by_risk"] == store.counts_by_level()


# -- reviews, runs, errors, info -------------------------------------------------------------


def test_reviews_are_an_append_only_trail_of_state_changes(store):
    record = make_record()
    store.upsert_records([record])
    store.add_review(record.id, status="acknowledged", note="looking", reviewer="ana")
    store.add_review(record.id, status="in_progress", reviewer="ana")
    closed = store.add_review(record.id, status="closed", reason="false_positive", note="our scanner", reviewer="bo")
    assert (closed["old_status"], closed["status"], closed["close_reason"]) == ("in_progress", "closed", "false_positive")
    trail = store.list_reviews(record.id)
    assert [(r.old_status, r.status, r.close_reason, r.note, r.reviewer, r.incident_id) for r in trail] == [
        ("open", "acknowledged", None, "looking", "ana", None), ("acknowledged", "in_progress", None, None, "ana", None),
        ("in_progress", "closed", "false_positive", "our scanner", "bo", None)]
    got = store.get_record(record.id)
    assert (got.status, got.close_reason, got.analyst_note, got.reviewer) == ("closed", "false_positive", "our scanner", "bo")
    assert got.reviewed_at == trail[-1].created_at
    store.add_review(record.id, note="still our scanner")  # a note alone keeps the state and its reason
    assert (store.get_record(record.id).status, store.get_record(record.id).close_reason) == ("closed", "false_positive")
    store.add_review(record.id, status="open", reviewer="cy")  # reopened: the reason goes with the close
    assert (store.get_record(record.id).status, store.get_record(record.id).close_reason) == ("open", None)
    for status, reason, message in (("ignored", None, "Unknown review status"), ("closed", None, "Closing needs a reason"),
                                    ("acknowledged", "duplicate", "goes with status closed only"),
                                    ("closed", "maybe", "Unknown close reason")):
        with pytest.raises(InputError, match=message):
            store.add_review(record.id, status=status, reason=reason)
    with pytest.raises(InputError, match="No record"):
        store.add_review("nope", status="acknowledged")
    assert len(store.list_reviews(record.id)) == 5


def test_step_20_maps_the_old_review_states_and_fills_the_trail(db_url):
    """Issue 42: new → open, confirmed → in_progress, false_positive → closed (false_positive),
    resolved → closed (true_positive), on the records, the incidents and both trails; each trail row
    gets the state before it, each record and incident its last reviewer."""
    _store_at(db_url, 18)
    engine = make_engine(db_url)
    old = {"a": "new", "b": "confirmed", "c": "false_positive", "d": "resolved"}
    with engine.begin() as conn:
        for record_id, status in old.items():
            row = Base.metadata.tables["records"].c
            values = {c.name: None for c in row if c.nullable} | {
                "id": record_id, "source": "/var/log/auth.log", "inode": 1, "line_start": 1, "line_end": 1,
                "line_count": 1, "risk_level": "high", "risk_rank": 3, "risk_score": 80, "category": "brute_force",
                "technique_ids": "", "techniques": "[]", "indicators": "{}", "anomaly": "x", "trace": "x",
                "recommendation": "x", "evidence": "{}", "detections": "[]", "decided_by": "rules",
                "prompt_version": "v4", "schema_version": "2", "status": status, "created_at": BASE_TS,
                "updated_at": BASE_TS, "ungrounded": "[]", "rejected": "{}", "verdict": "{}"}
            names = [n for n in values if n not in ("close_reason", "reviewer", "reviewed_at")]
            conn.execute(text(f"INSERT INTO records ({', '.join(names)}) VALUES ({', '.join(':' + n for n in names)})"),
                         {n: values[n] for n in names})
        for status, reviewer in (("confirmed", "ana"), ("resolved", "bo")):
            conn.execute(text("INSERT INTO reviews (record_id, status, reviewer, created_at) VALUES "
                              "('d', :s, :r, :t)"), {"s": status, "r": reviewer, "t": BASE_TS})
    engine.dispose()
    with open_store(db_url) as store:
        got = {r.id: (r.status, r.close_reason) for r in store.query_records()}
        assert got == {"a": ("open", None), "b": ("in_progress", None), "c": ("closed", "false_positive"),
                       "d": ("closed", "true_positive")}
        trail = store.list_reviews("d")
        assert [(r.old_status, r.status, r.close_reason) for r in trail] == [
            ("open", "in_progress", None), ("in_progress", "closed", "true_positive")]
        assert store.get_record("d").reviewer == "bo" and store.get_record("a").reviewer is None



def test_runs_and_errors(store):
    first = store.start_run(command="analyze /var/log", config={"model": "embedded"})
    second = store.start_run(command="watch /var/log", config={})
    store.finish_run(first, status="ok", metrics={"lines": 1000, "llm_calls": 4, "compression_ratio": 12.5})
    store.add_errors([ErrorRow(source="/x.gz", offset=None, stage="ingest", message="not a gzip file")], run_id=first)
    store.add_errors([ErrorRow(source="/y", offset=9, stage="parse", message="bad", line_no=2)], run_id=second)
    runs = {r.id: r for r in store.list_runs(10)}
    assert runs[first].status == "ok" and runs[first].metrics["compression_ratio"] == 12.5
    assert runs[first].finished_at is not None and runs[second].status == "running"
    assert [e.message for e in store.list_errors(run_id=first)] == ["not a gzip file"]
    assert len(store.list_errors(limit=10)) == 2
    with pytest.raises(InputError, match="No run"):
        store.finish_run("nope", status="ok", metrics={})


def test_info_counts_rows_and_reports_file_size(store):
    store.upsert_records([make_record(), make_record(line_start=50, line_end=60)])
    info = store.info()
    assert info["tables"]["records"] == 2 and info["tables"]["evidence"] == 2
    if info["dialect"] == "sqlite":
        assert info["file_size"] > 0 and info["url"].startswith("sqlite:///")
    else:
        assert "file_size" not in info and info["url"].startswith("postgresql+psycopg://")


# -- several processes on one file -----------------------------------------------------------


def _writer(url: str, worker: int, batches: int) -> None:
    store = open_store(url)
    for b in range(batches):
        with store.transaction() as tx:
            start = worker * 10_000 + b * 10 + 1
            tx.upsert_records([make_record(source=f"/w{worker}.log", line_start=start, line_end=start + 9)])
            tx.set_source(f"/w{worker}.log", worker, offset=b + 1, line_no=start + 9)
        store.count_records()  # interleave reads with the other process's writes
    store.close()


def test_concurrent_writer_processes_lose_nothing(db_url):
    open_store(db_url).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(db_url, w, 30)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    store = open_store(db_url)
    assert store.count_records() == 90
    assert sorted(s.offset for s in store.list_sources()) == [30, 30, 30]


def test_reader_is_not_blocked_by_an_open_write_transaction(db_url):
    writer, reader = open_store(db_url), open_store(db_url)
    writer.upsert_records([make_record()])
    with writer.transaction() as tx:
        tx.upsert_records([make_record(line_start=100, line_end=110)])
        assert reader.count_records() == 1  # sees the last committed state, without waiting
    assert reader.count_records() == 2
