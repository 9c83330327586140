"""`logwarden analyze --rules-only` end to end through the CLI, asserting on the SQLite rows."""

import json
from pathlib import Path

import pytest
from _log_fixtures import BRUTE_IP, SQLI_IP, write_logs
from click.testing import CliRunner

from logwarden.app.store import RecordFilter, open_store
from logwarden.cli.main import main


@pytest.fixture()
def logs(tmp_path: Path) -> Path:
    write_logs(tmp_path / "logs")
    return tmp_path / "logs"


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_analyze_rules_only_stores_records_windows_and_errors(logs, tmp_path):
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    result = run("analyze", str(logs), "--rules-only", "--db", db, "--json")
    assert result.exit_code == 1  # the corrupt gzip is a failure the exit code reports
    out = json.loads(result.stdout)
    store = open_store(db)
    records = store.query_records(RecordFilter(), limit=100)
    by_category = {r.category: r for r in records}
    assert {"brute_force", "web_attack"} <= set(by_category)
    brute = by_category["brute_force"]
    assert brute.risk_level == "high" and BRUTE_IP in brute.indicators.ips
    assert brute.evidence.line_numbers[0] == 1 and 31 in brute.evidence.line_numbers
    assert any(t.id.startswith("T1110") for t in brute.techniques)
    assert SQLI_IP in by_category["web_attack"].indicators.ips
    assert len(out["records"]) == len(records)
    errors = store.list_errors()
    assert any("broken.log.gz" in e.source for e in errors)
    # no model reads a digest in a rules-only run: none is built, so there is no compression ratio
    assert out["metrics"]["compression_ratio"] is None and out["metrics"]["digest_chars"] == 0
    assert "compression ratio" not in result.stderr and "model calls" not in result.stderr  # no model rows


def test_every_line_is_accounted_for_by_windows(logs, tmp_path):
    counts = write_logs(logs)
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    run("analyze", str(logs), "--rules-only", "--db", db)
    store = open_store(db)
    for name, n in counts.items():
        windows = store.list_windows(source=str(logs / name))
        assert sum(w.line_count for w in windows) == n, name


def test_reanalysis_is_idempotent(logs, tmp_path):
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    run("analyze", str(logs), "--rules-only", "--db", db)
    first = {r.id for r in open_store(db).query_records(RecordFilter(), limit=1000)}
    run("analyze", str(logs), "--rules-only", "--db", db)
    second = {r.id for r in open_store(db).query_records(RecordFilter(), limit=1000)}
    assert first == second and first


def test_resume_reads_only_appended_lines(logs, tmp_path):
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    run("analyze", str(logs / "auth.log"), "--rules-only", "--db", db)
    with open(logs / "auth.log", "a") as fh:
        fh.write("Mar  1 11:00:00 web01 sshd[9]: Accepted publickey for deploy from 10.0.0.5 port 4000 ssh2\n")
    result = run("analyze", str(logs / "auth.log"), "--rules-only", "--db", db, "--resume", "--json")
    assert json.loads(result.stdout)["metrics"]["lines"] == 1


def test_missing_path_is_a_clear_usage_error(tmp_path):
    result = CliRunner().invoke(main, ["analyze", str(tmp_path / "nope"), "--rules-only",
                                       "--db", f"sqlite:///{tmp_path / 'lw.db'}"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_records_list_and_db_info_json(logs, tmp_path):
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    run("analyze", str(logs), "--rules-only", "--db", db)
    listed = json.loads(run("records", "list", "--min-risk", "high", "--json", "--db", db).stdout)
    assert listed and all(r["risk_level"] in ("high", "critical") for r in listed)
    info = json.loads(run("db", "info", "--json", "--db", db).stdout)
    assert info["schema_version"] >= 1
    assert info["tables"]["records"] == len(open_store(db).query_records(RecordFilter(), limit=1000)) >= 2


@pytest.mark.parametrize("command", ["analyze", "triage", "watch", "ui", "export", "records", "db", "rules", "eval", "dataset",
                                     "train"])
def test_every_command_has_help(command):
    result = run(command, "--help")
    assert result.exit_code == 0 and "Usage" in result.output


def test_rules_lists_the_shipped_detectors_with_filters():
    web = json.loads(run("rules", "--format", "access", "--min-risk", "high", "--json").stdout)["rules"]
    assert web and all(r["level"] in ("high", "critical") and (not r["formats"] or "access" in r["formats"]) for r in web)
    assert "lw-web-sqli" in {r["id"] for r in web} and "lw-ssh-bruteforce" not in {r["id"] for r in web}
    listing = json.loads(run("rules", "--search", "T1110.001", "--category", "brute_force", "--json").stdout)
    brute = listing["rules"]
    assert {"lw-ssh-bruteforce", "lw-ftp-login-failures"} <= {r["id"] for r in brute}
    assert next(r for r in brute if r["id"] == "lw-ssh-bruteforce")["correlation"]["threshold"] == 5
    assert listing["profile"]["min_level"] == "low" and listing["packs"][0]["name"] == "logwarden"
    assert run("rules", "--format", "evtx").exit_code == 2  # not a format: bad usage
