"""Evidence context read back from log files (logwarden.ui.evidence)."""

from __future__ import annotations

import gzip
import shutil

import pytest
from _ui_helpers import SAMPLES

from logwarden.app.pipeline import Pipeline
from logwarden.app.run_options import RunOptions
from logwarden.app.store import open_store
from logwarden.schemas import ExemplarLine
from logwarden.ui.evidence import changed_since_analysis, context_lines, format_lines, is_document

LINES = [f"Nov 29 10:00:{i:02d} host sshd[1]: line {i}" for i in range(1, 31)]


def test_context_around_evidence_lines(tmp_path):
    log = tmp_path / "auth.log"
    log.write_text("\n".join(LINES) + "\n")
    found = context_lines(str(log), [10, 20], radius=2)
    assert [line.line_no for line in found] == [8, 9, 10, 11, 12, 18, 19, 20, 21, 22]
    assert [line.line_no for line in found if line.is_evidence] == [10, 20]
    assert found[2].text == LINES[9]


def test_marked_lines_and_file_edges(tmp_path):
    log = tmp_path / "auth.log"
    log.write_text("\n".join(LINES) + "\n")
    found = context_lines(str(log), [1, 30], marked=[2], radius=3)
    assert [line.line_no for line in found] == [1, 2, 3, 4, 27, 28, 29, 30]
    assert {line.line_no for line in found if line.is_evidence} == {1, 2, 30}


def test_gzip_source_is_read(tmp_path):
    log = tmp_path / "auth.log.1.gz"
    with gzip.open(log, "wt") as fh:
        fh.write("\n".join(LINES) + "\n")
    assert [line.text for line in context_lines(str(log), [5], radius=0)] == [LINES[4]]


def test_missing_or_non_file_sources_have_no_context(tmp_path):
    assert context_lines(str(tmp_path / "gone.log"), [1]) is None
    assert context_lines("triage:0123456789ab", [1]) is None
    assert context_lines(str(tmp_path), [1]) is None


def test_format_marks_evidence_and_gaps(tmp_path):
    log = tmp_path / "auth.log"
    log.write_text("\n".join(LINES) + "\n")
    text = format_lines(context_lines(str(log), [3, 20], radius=1))
    rows = text.splitlines()
    assert rows[1].startswith(">      3  ") and rows[0].startswith("       2  ")
    assert "     …" in rows


def test_changed_since_analysis(tmp_path):
    log = tmp_path / "auth.log"
    log.write_text("\n".join(LINES) + "\n")
    lines = context_lines(str(log), [5], radius=0)
    assert not changed_since_analysis([ExemplarLine(line_no=5, text=LINES[4])], lines)
    assert changed_since_analysis([ExemplarLine(line_no=5, text="a different line")], lines)


@pytest.mark.parametrize("name", ["windows_security.jsonl", "cloudtrail.jsonl", "cloudtrail_records.json",
                                  "access.log.2.gz"])
def test_unchanged_long_line_files_are_not_called_rewritten(tmp_path, name):
    """Issue 31 item 5: stored evidence is cut at 1,000 characters; comparing that head with the whole
    line called every unchanged Windows and CloudTrail file "rotated or rewritten"."""
    log = tmp_path / name
    shutil.copyfile(SAMPLES / name, log)
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    Pipeline(store, None, RunOptions(rules_only=True)).analyze([log])
    records = store.query_records(limit=1000)
    assert records
    for record in records:
        stored = record.evidence.exemplars
        lines = context_lines(str(log), [e.line_no for e in stored])
        assert is_document(str(log)) or not changed_since_analysis(stored, lines), record.id
    if name.endswith(".jsonl"):  # one event a line: a rewritten evidence line is noticed
        record = records[0]
        number = record.evidence.exemplars[0].line_no
        text = log.read_text().splitlines()
        text[number - 1] = text[number - 1].replace('"', "'", 1)
        log.write_text("\n".join(text) + "\n")
        assert changed_since_analysis(record.evidence.exemplars, context_lines(str(log), [number]))
