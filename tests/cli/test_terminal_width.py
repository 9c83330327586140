"""80 columns (issue 45, item 5): at 80 columns `make run`'s own final table (`records list`) lost
its risk and status columns and the suggested commands broke inside the database URL. Every table
keeps risk, time, host, rule or title and id at 80 columns, says what it left out, and the next
commands are printed whole, one a line. Run as the analyst runs them: a subprocess that believes it
writes to an 80-column terminal (COLUMNS=80, FORCE_COLOR), and one in a real pseudo-terminal 80
columns wide."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest
from _repo import REPO, SAMPLE_LOGS
from rich.cells import cell_len

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
WIDTH = 80


def lw(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**_env(), "FORCE_COLOR": "1", "COLUMNS": str(WIDTH), **(env or {})}
    return subprocess.run([sys.executable, "-m", "logwarden.cli.main", *args], capture_output=True, text=True,
                          timeout=300, cwd=REPO, env=env)


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR")}


def in_pty(*args: str, columns: int = WIDTH) -> str:
    """What the command writes to a real terminal `columns` wide (no COLUMNS: rich asks the terminal)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    done = subprocess.Popen([sys.executable, "-m", "logwarden.cli.main", *args], stdin=follower, stdout=follower,
                            stderr=follower, cwd=REPO, env={**_env(), "TERM": "xterm"}, close_fds=True)
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the command ended and closed its side
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    assert done.wait(timeout=300) == 0, out[-2000:]
    return plain(out.decode("utf-8", "replace")).replace("\r\n", "\n")


def plain(text: str) -> str:
    return ANSI.sub("", text)


@pytest.fixture(scope="module")
def analysed(tmp_path_factory) -> tuple[str, subprocess.CompletedProcess]:
    """Two real sample logs with hosts (Windows events and sshd) in a store deep enough in the file
    system that every suggested command is longer than 80 columns."""
    folder = tmp_path_factory.mktemp("width") / "a-case-folder-with-a-long-name" / "analyst-workspace"
    folder.mkdir(parents=True)
    db = f"sqlite:///{folder / 'logwarden-store.db'}"
    done = lw("analyze", str(SAMPLE_LOGS / "windows_security.jsonl"), str(SAMPLE_LOGS / "auth.log"), "--rules-only",
              "--db", db)
    assert done.returncode == 0, done.stderr[-3000:]
    return db, done


def test_the_next_commands_are_printed_whole_one_a_line(analysed):
    db, done = analysed
    lines = plain(done.stderr).splitlines()
    for command in (f"logwarden records list --min-risk high --db {db}", f"logwarden records show ID --db {db}",
                    f"logwarden incidents list --min-risk medium --db {db}", f"logwarden ui --db {db}"):
        assert len(command) > WIDTH
        assert f"  {command}" in lines, "\n".join(lines[-12:])
    assert f"database: {db}" in lines


def test_the_run_summary_tables_fit_and_keep_the_levels(analysed):
    _, done = analysed
    text = plain(done.stderr)
    summary = text[text.index("logwarden analyze"):text.index("first event")]
    assert all(cell_len(line) <= WIDTH for line in summary.splitlines()), summary
    assert "records critical" in summary and "┃ level" in summary and "│ critical │" in summary
    # each top rule, host and address whole on its line, with its count (one five-column table cut
    # `lw-ssh-bruteforc` / `e (4)`)
    tops = text[text.index("top rules per level"):text.index("first event")]
    cells = [c.strip() for line in tops.splitlines() if line.startswith("│") for c in line.strip("│").split("│")[1:]]
    named = [c for c in cells if c and not c.isdigit()]
    assert named and all(re.fullmatch(r"\S+ \(\d+\)|-", c) for c in named), tops


def _listed(db: str) -> list[dict]:
    found = lw("records", "list", "--limit", "20", "--json", "--db", db)
    assert found.returncode == 0, found.stderr
    return json.loads(found.stdout)


def _assert_records_table(table: str, records: list[dict]) -> None:
    lines = [line for line in table.splitlines() if line.strip()]
    header = next(line for line in lines if line.startswith("risk"))
    assert header.split()[:6] == ["risk", "last", "event", "(UTC)", "host", "rule"] and header.split()[6] == "id"
    assert all(cell_len(line) <= WIDTH for line in lines), table
    for record in records:
        row = next(line for line in lines if record["id"][:12] in line)
        assert row.startswith(record["risk_level"])
        assert record["last_ts"][:19].replace("T", " ") in row
        assert (record["host"] or "-")[:5] in row
        assert (record["detections"] or ["model"])[0][:8] in row
    assert "left out at 80 columns: source, category, anomaly, status" in table


def test_records_list_keeps_the_essential_columns_at_80(analysed):
    db, _ = analysed
    records = _listed(db)
    assert records and any(r["host"] for r in records)
    done = lw("records", "list", "--limit", "20", "--db", db)
    assert done.returncode == 0, done.stderr
    _assert_records_table(plain(done.stdout + done.stderr), records)


def test_records_list_in_a_real_80_column_terminal(analysed):
    db, _ = analysed
    _assert_records_table(in_pty("records", "list", "--limit", "20", "--db", db), _listed(db))


def test_a_wider_terminal_shows_the_other_columns_again(analysed):
    db, _ = analysed
    wide = in_pty("records", "list", "--limit", "5", "--db", db, columns=250)
    header = next(line for line in wide.splitlines() if line.startswith("risk"))
    assert header.split()[-4:] == ["status", "category", "source", "anomaly"]
    assert "left out" not in wide


def test_incidents_list_keeps_the_essential_columns_at_80(analysed):
    db, _ = analysed
    incidents = json.loads(lw("incidents", "list", "--json", "--db", db).stdout)
    assert incidents
    table = in_pty("incidents", "list", "--db", db)
    lines = [line for line in table.splitlines() if line.strip()]
    assert next(line for line in lines if line.startswith("risk")).split() == ["risk", "first", "(UTC)", "hosts",
                                                                              "title", "id"]
    assert all(cell_len(line) <= WIDTH for line in lines), table
    for incident in incidents:
        row = next(line for line in lines if incident["id"] in line)
        assert row.startswith(incident["risk_level"]) and incident["title"][:8] in row
        assert (", ".join(incident["hosts"]) or "-")[:3] in row


def test_a_piped_list_is_unchanged_by_the_width(analysed):
    db, _ = analysed
    piped = subprocess.run([sys.executable, "-m", "logwarden.cli.main", "records", "list", "--db", db],
                           capture_output=True, text=True, cwd=REPO, env={**_env(), "COLUMNS": "80"}, timeout=300)
    assert piped.stdout.splitlines()[0].split("\t") == ["id", "last_event", "risk", "status", "host", "category",
                                                        "source", "lines", "ips", "users", "rules", "anomaly"]


def test_shown_values_keep_the_table_within_the_width():
    """A host name far longer than the terminal is cut with an ellipsis, never wraps the row."""
    from rich.console import Console

    from logwarden.cli.columns import Column, fit_table

    columns = (Column("risk", most=8, least=8), Column("host", most=26, least=6), Column("id", most=12, least=12),
               Column("note", most=200, least=20, drop=1))
    table, dropped = fit_table(columns, [["high", "h" * 300, "abcdef012345", "n" * 300]], 40)
    console = Console(width=40, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(table)
    rows = console.export_text().splitlines()
    assert dropped == ["note"] and len(rows) == 3 and all(cell_len(r) <= 40 for r in rows)
    assert "abcdef012345" in rows[2] and rows[2].startswith("high") and "…" in rows[2]



def test_the_rules_table_keeps_level_id_and_title_at_80():
    table = in_pty("rules", "--search", "brute")
    lines = [line for line in table.splitlines() if line.strip()]
    header = next(line for line in lines if line.startswith("level"))
    assert header.split()[:5] == ["level", "id", "title", "/", "reason"]
    assert all(cell_len(line) <= WIDTH for line in lines), table
    rows = json.loads(lw("rules", "--search", "brute", "--json").stdout)["rules"]
    assert rows
    for rule in rows:
        assert any(line.startswith(rule["level"]) and rule["id"][:10] in line and rule["title"][:10] in line
                   for line in lines), rule
