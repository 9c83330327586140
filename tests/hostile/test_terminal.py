"""Issue 32, item 7: a log value printed to a terminal is shown, never obeyed. ESC/OSC/CSI, C1
controls and bidi overrides from logs, file names, rule packs or the model's answer come out as
visible escapes in tables, `records show`, triage, warnings and streamed output; `--json` stays
exact (and escapes them); CEF lines carry no raw NUL or ESC."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _fake_engine import FakeEngine
from _hostile import CLEAR, RLO, TITLE, escape_name, escapes, has_raw_control
from _repo import REPO
from click.testing import CliRunner

from logwarden.app import backends
from logwarden.app.config import get_settings
from logwarden.cli.main import main


def cli(*args: str, **kw):
    return CliRunner().invoke(main, list(args), **kw)


@pytest.fixture
def hostile_db(tmp_path) -> str:
    logs = tmp_path / "logs"
    logs.mkdir()
    escapes(logs)
    escape_name(logs)
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    assert cli("analyze", str(logs), "--rules-only", "--final", "--db", db).exit_code == 0
    return db


def test_records_list_and_show_print_no_terminal_control_from_the_logs(hostile_db):
    listed = cli("records", "list", "--db", hostile_db)
    assert listed.exit_code == 0 and not has_raw_control(listed.stdout)
    records = json.loads(cli("records", "list", "--json", "--db", hostile_db).stdout)
    for record in records:
        shown = cli("records", "show", record["id"], "--db", hostile_db)
        assert shown.exit_code == 0 and not has_raw_control(shown.stdout), shown.stdout
    exemplars = " ".join(e["text"] for r in records for e in r["evidence"]["exemplars"])
    assert TITLE in exemplars or CLEAR in exemplars or RLO in exemplars  # --json is exact: the raw text, decoded


def test_json_output_escapes_c1_and_bidi_but_decodes_to_the_exact_values(hostile_db):
    out = cli("records", "list", "--json", "--db", hostile_db).stdout
    assert not has_raw_control(out)
    assert "\\u202e" in out or "\\u009b" in out
    records = json.loads(out)
    assert any(RLO in e["text"] for r in records for e in r["evidence"]["exemplars"])  # exact, once decoded
    assert any("<U+202E>" in r["source"] for r in records)  # a file name is escaped where it enters


def test_export_lines_carry_no_raw_control(hostile_db):
    for fmt in ("cef", "jsonl", "ecs", "ocsf", "splunk-hec"):
        out = cli("export", "--format", fmt, "--db", hostile_db)
        assert out.exit_code == 0 and out.stdout.strip() and not has_raw_control(out.stdout), fmt


def test_triage_prints_the_hostile_lines_visibly():
    user = f"a{TITLE}{CLEAR}{RLO}b"
    snippet = "\n".join(f"Mar  1 10:00:{i:02d} web01 sshd[1]: Failed password for {user} from 203.0.113.9 port 1 ssh2"
                         for i in range(20))
    done = cli("triage", snippet, "--rules-only", "--no-store")
    assert done.exit_code == 0 and "brute_force" in done.stdout, done.stdout
    assert not has_raw_control(done.stdout) and "\\x1b]0;PWNED" in done.stdout  # the account, shown in the trace


# A model that repeats what the log said: escapes and bidi streamed before its answer.
HOSTILE_ANSWER = TITLE + CLEAR + "\x9b2J" + RLO + json.dumps({"findings": [], "recommendation": "x"})


def test_the_models_streamed_answer_is_shown_not_obeyed(monkeypatch):
    monkeypatch.setattr(backends, "open_engine", lambda options: FakeEngine(HOSTILE_ANSWER, model_name="hostile", pieces=5))
    get_settings.cache_clear()
    line = "Mar  1 10:00:00 web01 sshd[1]: Failed password for root from 203.0.113.9 port 1 ssh2"
    done = cli("triage", line, "--no-store")
    assert done.exit_code == 0, done.output
    assert not has_raw_control(done.stdout) and "\\x1b]0;PWNED" in done.stdout


def test_analyze_warnings_about_a_hostile_file_name_are_shown_not_obeyed(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / f"core{TITLE}{RLO}.bin").write_bytes(bytes(range(1, 32)) * 500)  # skipped as binary: a warning
    done = subprocess.run([sys.executable, "-m", "logwarden.cli.main", "analyze", str(logs), "--rules-only",
                           "--db", f"sqlite:///{tmp_path / 'lw.db'}"], capture_output=True, text=True, timeout=120,
                          cwd=REPO)
    assert done.returncode == 1 and "binary file skipped" in done.stderr, done.stderr
    assert not has_raw_control(done.stderr) and "\\x1b]0;PWNED" in done.stderr


def test_rule_pack_titles_are_shown_not_obeyed(tmp_path):
    pack = tmp_path / "pack.yml"
    pack.write_text('title: "evil \\e]0;PWNED\\a \\u202e"\nname: evil-title\nlogsource: {product: linux, '
                    "service: sshd}\ndetection:\n  sel: {message|contains: x}\n  condition: sel\nlevel: low\n")
    done = cli("rules", "--sigma", str(pack), "--search", "evil")
    assert done.exit_code == 0 and "evil-title" in done.stdout
    assert not has_raw_control(done.stdout + done.stderr)
