"""Record schema 2 in the store: a database written before it (migration step 1, schema-1 records
with a model-written trace and no `ungrounded` column) migrates, and its records stay readable."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import create_engine, insert

from logwarden.app.store import LATEST_VERSION, RecordFilter, open_store
from logwarden.app.store.migrations import STEPS, _schema_migrations, _v1_metadata, _versions
from logwarden.schemas import SCHEMA_VERSION


def old_database(path) -> str:
    """A store as logwarden with record schema 1 left it: migration 1 applied, one model record."""
    url = f"sqlite:///{path}"
    now = datetime(2026, 11, 30, 12, 0, 0)
    md = _v1_metadata()
    engine = create_engine(url)
    with engine.begin() as conn:
        md.create_all(conn)
        _versions.create_all(conn)
        conn.execute(insert(_schema_migrations).values(version=1, name=STEPS[0][1], applied_at=now))
        conn.execute(insert(md.tables["records"]).values(
            id="old-record-1", source="/var/log/auth.log", inode=7, line_start=1, line_end=8, line_count=8,
            first_ts=now, last_ts=now, risk_level="high", risk_rank=3, risk_score=80, category="brute_force",
            technique_ids=" T1110 ", techniques=[{"id": "T1110", "name": "Brute Force", "tactic": "credential-access"}],
            indicators={"ips": ["203.0.113.7"]}, evidence={"line_numbers": list(range(1, 9)), "exemplars": [],
                                                           "template_ids": [3]},
            detections=["lw-ssh-bruteforce"], anomaly="8 failed logins", trace="lines 1-8 written by the model",
            recommendation="block it", decided_by="rules+llm", prompt_version="analyze_v1", schema_version="1",
            status="confirmed", created_at=now, updated_at=now,
            raw_model_output='{"anomaly": "8 failed logins", "trace": "lines 1-8", "recommendation": "block it", '
                             '"category": "brute_force", "techniques": ["T1110"], "risk_level": "high"}'))
    engine.dispose()
    return url


def test_an_old_store_migrates_and_its_records_stay_readable(tmp_path):
    store = open_store(old_database(tmp_path / "old.db"))
    assert store.info()["schema_version"] == LATEST_VERSION
    [record] = store.query_records(RecordFilter(), limit=10)
    assert (record.id, record.schema_version, record.status) == ("old-record-1", "1", "in_progress")  # issue 42: confirmed → in_progress
    assert record.trace == "lines 1-8 written by the model" and record.ungrounded == [] and record.evidence.refs == []
    assert SCHEMA_VERSION == "2"
    updated = record.model_copy(update={"ungrounded": ["198.51.100.23"]})
    store.upsert_records([updated])  # new records and old ones live side by side
    assert store.get_record("old-record-1").ungrounded == ["198.51.100.23"]
    store.close()
