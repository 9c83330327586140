"""Issue 43, item 7: on a real terminal (rich draws links, colours and tables there) every log
value in every table and summary is text: no rich markup read out of it (`[link=…]`), no emoji
codes, no escape sequence or C1 control let through. Rich is forced to think it writes to a
terminal (FORCE_COLOR), as it does for the analyst."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from _repo import REPO, SAMPLE_LOGS

from logwarden.cli.terminal import add_row, cell

HOST = "[link=https://evil.example/x]DC01[/link]\x1bc\x1b]0;PWNED\x07\x9b2J:warning:"
OBEYED = ("\x1b]8;", "\x1b]0;PWNED", "\x1bc", "\x9b")  # a hyperlink, a window title, a reset, a C1 CSI


def lw(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "FORCE_COLOR": "1", "COLUMNS": "250"}
    return subprocess.run([sys.executable, "-m", "logwarden.cli.main", *args], capture_output=True, text=True,
                          timeout=300, cwd=REPO, env=env)


def assert_inert(text: str) -> None:
    assert not [code for code in OBEYED if code in text], text[-3000:]
    assert "[link=https://evil.example/x]DC01" in text and ":warning:" in text  # shown as written
    assert "\\x1b]0;PWNED" in text  # the escape, visible


@pytest.fixture(scope="module")
def hostile_windows(tmp_path_factory) -> tuple[str, subprocess.CompletedProcess]:
    """The sample Windows events with one computer renamed to markup and escape codes, analysed."""
    folder = tmp_path_factory.mktemp("inert")
    text = (SAMPLE_LOGS / "windows_security.jsonl").read_text(encoding="utf-8")
    escaped = json.dumps(HOST)[1:-1]
    assert "DC01.corp.example.com" in text
    (folder / "win.jsonl").write_text(text.replace("DC01.corp.example.com", escaped), encoding="utf-8")
    db = f"sqlite:///{folder / 'lw.db'}"
    return db, lw("analyze", str(folder / "win.jsonl"), "--rules-only", "--db", db)


def test_the_analyze_summary_shows_a_hostile_host_name_as_text(hostile_windows):
    _, done = hostile_windows
    assert done.returncode == 0, done.stderr[-2000:]
    assert_inert(done.stderr)


def test_the_records_table_shows_a_hostile_host_name_as_text(hostile_windows):
    db, _ = hostile_windows
    done = lw("records", "list", "--host", "evil", "--db", db)
    assert done.returncode == 0, done.stderr
    table = done.stdout
    assert not [code for code in OBEYED if code in table] and "[link=https" in table, table


def test_the_incidents_list_and_show_print_no_markup_or_controls(hostile_windows):
    db, _ = hostile_windows
    listed = lw("incidents", "list", "--db", db)
    assert listed.returncode == 0 and not [code for code in OBEYED if code in listed.stdout]
    ids = [i["id"] for i in json.loads(lw("incidents", "list", "--json", "--db", db).stdout)]
    for incident in ids:
        shown = lw("incidents", "show", incident, "--db", db).stdout
        assert not [code for code in OBEYED if code in shown], shown


def test_a_table_cell_is_text_never_markup():
    from rich.console import Console
    from rich.table import Table

    console = Console(force_terminal=True, width=200, record=True)
    table = Table()
    table.add_column("host")
    add_row(table, HOST)
    console.print(table)
    out = console.export_text(styles=True)
    assert "[link=https://evil.example/x]" in out and "\x1b]8;" not in out and "\x1bc" not in out
    assert cell("a:warning:b").plain == "a:warning:b"
