"""`logwarden export` as an analyst hands over to a SIEM (issue 45, item 6), from a real store that
`analyze --rules-only` filled from sample_logs: HEC `host` is the logs' host (absent where the logs
name none, never the analyst's machine), ECS names every technique and parent from the ATT&CK
table, `--status` picks review states as `records review` sets them, and a time filter that empties
the output says the stored range (old logs analysed today are not "24h")."""

from __future__ import annotations

import json
import socket

import pytest
from _repo import SAMPLE_LOGS
from click.testing import CliRunner

from logwarden.app.store import open_store
from logwarden.cli.main import main as cli


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('export') / 'lw.db'}"
    done = run("analyze", str(SAMPLE_LOGS), "--rules-only", "--year", "2024", "--db", url)  # its syslog files state no year
    assert done.exit_code == 0, done.output
    return url


def exported(db: str, *args: str) -> list[dict]:
    result = run("export", *args, "--db", db)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_hec_host_is_the_host_the_logs_name_and_absent_where_they_name_none(db):
    events = exported(db, "--format", "splunk-hec")
    hostless = [e for e in events if not e["event"]["host"]]
    assert hostless and len(hostless) < len(events)  # sample_logs has both: web logs name no host
    for event in events:
        hosts = [h for h in (event["event"]["host"] or "").split(", ") if h]
        if hosts:
            assert event["host"] == hosts[0] and event["fields"]["hosts"] == hosts
        else:
            assert "host" not in event and "hosts" not in event["fields"]
    assert socket.gethostname() not in {e.get("host") for e in hostless}


def test_ecs_names_every_technique_its_parent_and_its_tactics_from_the_attack_table(db):
    threats = [d["threat"] for d in exported(db, "--format", "ecs") if "threat" in d]
    subs = [t["technique"]["subtechnique"] for t in threats if "subtechnique" in t["technique"]]
    assert threats and subs
    for threat in threats:
        technique = threat["technique"]
        assert all(technique["name"]) and len(technique["name"]) == len(technique["id"])
        assert all(", " not in name for name in threat["tactic"]["name"])  # one tactic a value
        assert len(threat["tactic"]["id"]) == len(threat["tactic"]["name"])
    named = {i: n for t in threats for i, n in zip(t["technique"]["id"], t["technique"]["name"])}
    named_subs = {i: n for s in subs for i, n in zip(s["id"], s["name"])}
    assert named["T1136"] == "Create Account" and named_subs["T1136.001"] == "Local Account"
    assert named["T1505"] == "Server Software Component" and named_subs["T1505.003"] == "Web Shell"


def test_ecs_incidents_name_their_techniques(db):
    docs = exported(db, "--format", "ecs", "--kind", "incidents")
    techniques = [d["threat"]["technique"] for d in docs if d["threat"]["technique"]["id"]]
    assert techniques and all(all(t["name"]) for t in techniques)


def test_status_exports_only_records_in_that_review_state(db, tmp_path):
    every = exported(db, "--format", "jsonl")
    picked = every[0]["id"]
    reviewed = run("records", "review", picked[:12], "--status", "acknowledged", "--db", db)
    assert reviewed.exit_code == 0, reviewed.output
    try:
        assert [r["id"] for r in exported(db, "--format", "jsonl", "--status", "acknowledged")] == [picked]
        assert len(exported(db, "--format", "ecs", "--status", "open")) == len(every) - 1
        both = exported(db, "--format", "jsonl", "--status", "open", "--status", "acknowledged")
        assert len(both) == len(every)
        assert exported(db, "--format", "jsonl", "--status", "closed") == []
        incidents = open_store(db, readonly=True).incidents.query(limit=10**6)
        assert len(exported(db, "--format", "jsonl", "--kind", "incidents", "--status", "open")) == len(incidents)
    finally:
        run("records", "review", picked[:12], "--status", "open", "--db", db)
    refused = run("export", "--format", "jsonl", "--status", "confirmed", "--db", db)
    assert refused.exit_code == 2 and "open, acknowledged, in_progress, closed" in refused.output  # the states are named


@pytest.mark.parametrize("kind", ["records", "incidents"])
@pytest.mark.parametrize("window", [("--since", "24h"), ("--until", "2001-01-01")])
def test_a_time_filter_that_empties_the_output_says_the_stored_range(db, kind, window):
    result = run("export", "--format", "jsonl", "--kind", kind, *window, "--db", db)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    said = " ".join(result.stderr.split())
    assert f"0 {kind} exported" in said
    stored = exported(db, "--format", "jsonl", "--kind", kind)
    first = min(r.get("first_ts") or r.get("start_time") for r in stored)
    last = max(r.get("last_ts") or r.get("end_time") for r in stored)
    assert f"from {str(first)[:10]}" in said and f"to {str(last)[:10]}" in said and "UTC" in said
    assert "the logs' own" in said and "--since 2024-03-1" in said


def test_no_hint_when_the_time_filter_finds_something_or_nothing_else_matches(db):
    found = run("export", "--format", "jsonl", "--since", "2024-03-12T12:00", "--db", db)
    assert found.exit_code == 0 and found.stdout and "logs' own" not in found.stderr
    nothing = run("export", "--format", "jsonl", "--since", "24h", "--status", "closed", "--db", db)
    assert nothing.exit_code == 0 and nothing.stdout == "" and "logs' own" not in nothing.stderr


def test_until_keeps_what_ended_by_then(db):
    records = exported(db, "--format", "jsonl", "--until", "2024-03-11T00:00")
    assert records and all(r["last_ts"] < "2024-03-11" for r in records)
    assert len(records) < len(exported(db, "--format", "jsonl"))
