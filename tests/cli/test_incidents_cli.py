"""`logwarden incidents list|show|review|group` through the real CLI: --json, id prefixes, exit codes,
and reading commands that never create a store."""

from __future__ import annotations

import json

import pytest
from _incident_helpers import ATTACKER, OTHER, burst, write
from click.testing import CliRunner

from logwarden.cli.main import main as cli


@pytest.fixture()
def db(tmp_path) -> str:
    write(tmp_path / "logs" / "auth.log", burst("web01", 10, 0, ATTACKER) + burst("web01", 10, 20, ATTACKER,
                                                                                 pid=2000, accepted=True)
          + burst("web01", 13, 0, OTHER, pid=3000) + burst("web01", 13, 20, OTHER, pid=4000))
    url = f"sqlite:///{tmp_path / 'lw.db'}"
    result = CliRunner().invoke(cli, ["analyze", str(tmp_path / "logs"), "--rules-only", "--year", "2026", "--db", url])
    assert result.exit_code == 0, result.output
    return url


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_list_and_show_as_json(db):
    listed = run("incidents", "list", "--json", "--db", db)
    assert listed.exit_code == 0, listed.output
    found = json.loads(listed.stdout)
    assert [i["risk_level"] for i in found] == ["high", "medium"]  # riskiest first
    top = found[0]
    assert top["title"] == "brute force on web01 (2 records)" and len(top["record_ids"]) == 2
    shown = run("incidents", "show", top["id"][4:10], "--json", "--db", db)  # a prefix without "inc-"
    assert shown.exit_code == 0, shown.output
    detail = json.loads(shown.stdout)
    assert detail["id"] == top["id"] and [r["id"] for r in detail["records"]] == top["record_ids"]
    assert all(r["host"] == "web01" for r in detail["records"]) and detail["tactics"]
    assert json.loads(run("incidents", "list", "--json", "--min-risk", "high", "--db", db).stdout) == [top]


def test_show_prints_the_timeline_per_host(db):
    top = json.loads(run("incidents", "list", "--json", "--db", db).stdout)[0]
    shown = run("incidents", "show", top["id"], "--db", db)
    assert shown.exit_code == 0
    assert "timeline:" in shown.stdout and "  web01" in shown.stdout
    assert all(r[:12] in shown.stdout for r in top["record_ids"])


def test_review_sets_state_owner_and_note_keeps_a_trail_and_reaches_the_records(db):
    top = json.loads(run("incidents", "list", "--json", "--db", db).stdout)[0]
    done = run("incidents", "review", top["id"][:10], "--status", "in_progress", "--owner", "ana", "--note",
               "root owned", "--reviewer", "ana", "--json", "--db", db)
    assert done.exit_code == 0, done.output
    written = json.loads(done.stdout)
    assert {k: written[k] for k in ("id", "old_status", "status", "close_reason", "owner", "analyst_note", "records")} == {
        "id": top["id"], "old_status": "open", "status": "in_progress", "close_reason": None, "owner": "ana",
        "analyst_note": "root owned", "records": 2}
    run("incidents", "review", top["id"], "--note", "contained", "--db", db)
    closed = run("incidents", "review", top["id"], "--status", "closed", "--reason", "true_positive", "--db", db)
    assert closed.exit_code == 0 and "(2 records too)" in closed.output, closed.output
    detail = json.loads(run("incidents", "show", top["id"], "--json", "--db", db).stdout)
    assert (detail["status"], detail["close_reason"], detail["owner"], detail["analyst_note"]) == (
        "closed", "true_positive", "ana", "contained")
    assert [(r["old_status"], r["status"]) for r in detail["reviews"]] == [
        ("open", "in_progress"), ("in_progress", "in_progress"), ("in_progress", "closed")]
    for record_id in top["record_ids"]:  # each member moved with it, its history naming the incident
        shown = json.loads(run("records", "show", record_id, "--json", "--db", db).stdout)
        assert (shown["status"], shown["close_reason"]) == ("closed", "true_positive")
        assert [(h["old_status"], h["status"], h["incident_id"]) for h in shown["reviews"]] == [
            ("open", "in_progress", top["id"]), ("in_progress", "closed", top["id"])]
    assert "(incident " + top["id"] + ")" in run("records", "show", top["record_ids"][0], "--db", db).stdout
    listed = json.loads(run("incidents", "list", "--json", "--status", "closed", "--db", db).stdout)
    assert [i["id"] for i in listed] == [top["id"]]
    old = run("incidents", "review", top["id"], "--status", "resolved", "--db", db)
    assert old.exit_code == 2 and "--status closed --reason true_positive" in old.output


def test_exit_codes_and_no_store_created(tmp_path, db):
    for args in (("show", "inc-ffffffffffff"), ("review", "ffffffff", "--status", "acknowledged")):
        unknown = run("incidents", *args, "--db", db)  # issue 45: a mistyped id is a usage error (was 1)
        assert unknown.exit_code == 2 and "no incident with id" in unknown.stderr and "incidents list" in unknown.stderr
    bad = run("incidents", "review", "inc-", "--status", "nope", "--db", db)
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    assert run("incidents", "review", "inc-", "--db", db).exit_code == 2  # nothing to change
    missing = tmp_path / "none.db"
    for args in (("list",), ("show", "inc-1"), ("review", "inc-1", "--status", "acknowledged")):
        result = run("incidents", *args, "--db", f"sqlite:///{missing}")
        assert result.exit_code == 2 and "Traceback" not in result.output, args
    assert not missing.exists()


def test_group_regroups_idempotently_without_a_model(db):
    before = json.loads(run("incidents", "list", "--json", "--db", db).stdout)
    grouped = run("incidents", "group", "--rules-only", "--json", "--db", db)
    assert grouped.exit_code == 0, grouped.output
    assert json.loads(grouped.stdout) == {"incidents": len(before), "removed": 0}
    assert json.loads(run("incidents", "list", "--json", "--db", db).stdout) == before


def test_every_incidents_command_has_help():
    for command in ("list", "show", "review", "group"):
        result = run("incidents", command, "--help")
        assert result.exit_code == 0 and "Usage:" in result.output


def test_records_show_names_the_records_incident(db):
    top = json.loads(run("incidents", "list", "--json", "--db", db).stdout)[0]
    shown = run("records", "show", top["record_ids"][0][:12], "--db", db)
    assert shown.exit_code == 0 and f"incident: {top['id']} {top['title']}" in shown.stdout
