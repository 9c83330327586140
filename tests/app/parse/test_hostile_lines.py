"""Hostile lines (issue 16, defect 2 and what was found on the way): nesting and number bombs
never escape as an exception from format detection, parsing or detection — in `analyze`,
`triage` and the watcher each such line is still accounted for (a generic event)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _watch_helpers import append, covered, spans, watcher
from click.testing import CliRunner

from logwarden.app.events import LogLine
from logwarden.app.parse import detect_format, parse_stream
from logwarden.app.store import open_store
from logwarden.cli.main import main as cli

DEPTH = 10_000
BOMBS = {
    "objects": '{"a":' * DEPTH + "1" + "}" * DEPTH,
    "arrays": "[" * DEPTH + "]" * DEPTH,
    "mixed": '[{"a":' * (DEPTH // 2) + "1" + "}]" * (DEPTH // 2),
    "just_parseable": '{"a":' * 990 + "1" + "}" * 990,  # json.loads copes at the top level; walkers may not
    "inside_an_event": '{"EventID":4625,"Channel":"Security","EventData":' + '{"x":' * 3000 + "1" + "}" * 3001,
    "siblings": '{"a":[' + "[]," * 50 + "[" * 3000 + "]" * 3000 + "]}",
    "huge_int": '{"message":"x","n":' + "7" * 20_000 + "}",
    "huge_float": '{"message":"x","n":1e999999,"m":-1e999999}',
    "many_keys": "{" + ",".join(f'"k{i}":{i}' for i in range(20_000)) + "}",
}


def lines(texts: list[str]) -> list[LogLine]:
    return [LogLine(source="t.log", inode=0, offset=0, line_no=i, text=t) for i, t in enumerate(texts, 1)]


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_detection_and_parsing_survive(name):
    text = BOMBS[name]
    assert detect_format([text]).name in ("generic", "json", "windows")
    decision, events = parse_stream(lines([text, "Mar  1 10:00:00 web01 sshd[1]: Accepted password for a"]))
    events = list(events)
    assert [e.line_no for e in events] == [1, 2]


@pytest.mark.parametrize("name", ["objects", "arrays"])
def test_a_file_that_is_one_deep_document_survives(name):
    text = BOMBS[name]
    half = len(text) // 2
    decision, events = parse_stream(lines([text[:half], text[half:]]))  # "a multi-line JSON document"
    assert [e.line_no for e in events] == [1, 2]


@pytest.fixture()
def hostile_folder(tmp_path) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    for name, text in BOMBS.items():
        (folder / f"a_{name}.log").write_text(text + "\n")
    (folder / "b_array.json").write_text("[\n" + BOMBS["arrays"] + "\n]\n")
    append(folder / "z_auth.log", 0, 25)  # read after the bombs: must not be lost
    return folder


def test_analyze_reads_every_file_after_the_bombs(tmp_path, hostile_folder):
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    result = CliRunner().invoke(cli, ["analyze", str(hostile_folder), "--rules-only", "--json", "--db", db])
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output
    report = json.loads(result.stdout[result.stdout.index("{"):])
    assert report["metrics"]["files"] == len(BOMBS) + 2
    assert report["metrics"]["records"] >= 1  # the brute force in z_auth.log
    store = open_store(db)
    assert covered(spans(store, hostile_folder / "z_auth.log")) == list(range(1, 26))
    assert store.list_runs()[0].status in ("ok", "failed")


@pytest.mark.parametrize("name", ["objects", "arrays", "just_parseable", "inside_an_event"])
def test_triage_survives(name):
    result = CliRunner().invoke(cli, ["triage", BOMBS[name], "--rules-only", "--no-store", "--json"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output


def test_the_watcher_survives_and_accounts_for_the_bomb(tmp_path, hostile_folder):
    store = open_store(f"sqlite:///{tmp_path / 'w.db'}")
    w = watcher(store, hostile_folder, from_start=True)
    for _ in range(4):
        w.poll()
    for name in BOMBS:
        assert covered(spans(store, hostile_folder / f"a_{name}.log")) == [1], name
    assert covered(spans(store, hostile_folder / "z_auth.log")) == list(range(1, 26))
