"""The first facts an analyst checks must be right (issue 31): a record's host is its own evidence
lines' host, year-less syslog gets its own file's year (issue 45; it was the run's dated lines), files that are not logs are
skipped, a cut evidence line says how much was cut, a compressed source shows no negative lag.
Real sample logs through the real pipeline (rules-only) into a real SQLite store."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime
from pathlib import Path

from _repo import REPO

from logwarden.app.events import LogLine
from logwarden.app.export import export_records
from logwarden.app.parse import parse_stream
from logwarden.app.pipeline import Pipeline
from logwarden.app.run_options import RunOptions
from logwarden.app.store import RecordFilter, open_store

SAMPLES = REPO / "sample_logs"


def analyze(tmp_path: Path, names: list[str], **options):
    folder = tmp_path / "logs"
    folder.mkdir(exist_ok=True)
    for name in names:
        shutil.copyfile(SAMPLES / name, folder / name)
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    metrics = Pipeline(store, None, RunOptions(rules_only=True, **options)).analyze([folder])
    return folder, store, metrics


def event_hosts(path: Path) -> dict[int, str | None]:
    lines = [LogLine(str(path), 0, 0, n, text) for n, text in enumerate(path.read_text().splitlines(), 1)]
    _, events = parse_stream(lines, path=str(path))
    return {e.line_no: e.host for e in events}


# -- item 4: the host of a record is its evidence lines' host ----------------------------------------


def test_windows_records_name_the_host_of_their_own_events(tmp_path):
    folder, store, _ = analyze(tmp_path, ["windows_security.jsonl"])
    hosts = event_hosts(folder / "windows_security.jsonl")
    records = store.query_records(limit=100)
    assert records
    for record in records:
        own = {hosts[n] for n in record.evidence.line_numbers if hosts[n]}
        assert set(record.hosts) == own, (record.anomaly, record.host, own)
    assert sum("WS-FIN-07" in (r.host or "") for r in records) >= 8  # was DC01 on 10 of 13
    lsass = next(r for r in records if "LSASS" in r.anomaly)
    ecs = json.loads(next(iter(export_records([lsass], "ecs"))))
    assert ecs["host"]["name"] == "WS-FIN-07.corp.example.com"
    assert "WS-FIN-07" in next(iter(export_records([lsass], "cef")))


def test_a_record_whose_lines_come_from_several_hosts_lists_them(tmp_path):
    lines = [f"Mar 12 10:00:{i:02d} {host} sshd[{100 + i}]: Failed password for root from 203.0.113.5 port "
             f"{4000 + i} ssh2" for i, host in enumerate(["web01", "web02"] * 10)]
    log = tmp_path / "auth.log"
    log.write_text("\n".join(lines) + "\n")
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    Pipeline(store, None, RunOptions(rules_only=True)).analyze([log])
    [record] = [r for r in store.query_records(limit=10) if r.category == "brute_force"]
    assert sorted(record.hosts) == ["web01", "web02"] and record.host in ("web01, web02", "web02, web01")
    assert f"on {record.host}," in record.trace


# -- item 6: year-less syslog dated from its own file (issue 45) -----------------------------------------


def _age(path: Path, year: int) -> None:
    stamp = datetime(year, 12, 4).timestamp()
    os.utime(path, (stamp, stamp))


def test_year_less_lines_take_their_own_files_year_not_the_runs_dated_lines(tmp_path):
    """Issue 45 reversed issue 31's choice: another file's years never date a syslog (a 2005 log
    beside a 2026 one took 2026); see tests/cli/test_dates_per_file.py."""
    folder = tmp_path / "logs"
    folder.mkdir()
    for name in ("auth.log", "access.log"):  # web01's syslog and its dated access log (12/Mar/2024)
        shutil.copyfile(SAMPLES / name, folder / name)
    _age(folder / "auth.log", 2025)  # its lines state no year: the mtime's year it is
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    metrics = Pipeline(store, None, RunOptions(rules_only=True)).analyze([folder])
    years = {r.last_ts.year for r in store.query_records(limit=200) if r.source.endswith("auth.log")}
    assert years == {2025}
    [reason] = [why for name, why in metrics.years.items() if name.endswith("auth.log")]
    assert "modification time (2025-12-04)" in reason


def test_without_dated_lines_the_mtime_and_with_year_the_year_given(tmp_path):
    folder, store, metrics = analyze(tmp_path, ["secure"])
    _age(folder / "secure", 2025)
    metrics = Pipeline(store, None, RunOptions(rules_only=True)).analyze([folder])
    assert {r.last_ts.year for r in store.query_records(limit=100)} == {2025}
    assert "modification time" in next(iter(metrics.years.values()))
    forced = Pipeline(store, None, RunOptions(rules_only=True, year=2019))
    metrics = forced.analyze([folder])
    assert {r.last_ts.year for r in store.query_records(RecordFilter(run_id=forced.run_id), limit=100)} == {2019}
    assert "--year" in next(iter(metrics.years.values()))


# -- item 7: files that are not logs are skipped -----------------------------------------------------


def test_readme_and_labels_are_skipped_not_read_as_logs(tmp_path):
    folder, store, metrics = analyze(tmp_path, ["README.md", "labels.jsonl", "auth.log"])
    sources = {Path(r.source).name for r in store.query_records(limit=200)}
    assert sources == {"auth.log"}  # README.md and labels.jsonl made two "Log4Shell" records before
    skipped = {Path(name).name: why for name, why in metrics.skipped.items()}
    assert set(skipped) == {"README.md", "labels.jsonl"}
    assert "markdown" in skipped["README.md"] and "labels" in skipped["labels.jsonl"]
    assert metrics.files == 1


# -- item 10: the truncation note survives, a .gz shows no negative lag --------------------------------


def test_a_cut_evidence_line_keeps_its_truncation_note(tmp_path):
    attack = '"GET /item.php?id=1%20UNION%20SELECT%20user,password%20FROM%20users-- HTTP/1.1" 200 512 "-" "sqlmap/1.7"'
    line = f'203.0.113.9 - - [02/Mar/2026:10:00:00 +0000] {attack[:-1]}{"A" * 100_000}"'
    log = tmp_path / "access.log"
    log.write_text(line + "\n")
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    Pipeline(store, None, RunOptions(rules_only=True)).analyze([log])
    exemplar = store.query_records(limit=10)[0].evidence.exemplars[0]
    assert exemplar.text.endswith(f"… [truncated {len(line.encode()) - len(exemplar.text.split('…')[0].encode())} "
                                  "bytes]")
    assert len(exemplar.text) <= 1000


def test_a_compressed_source_read_to_its_end_has_no_lag(tmp_path):
    from logwarden.app.ingest import content_size

    folder, store, _ = analyze(tmp_path, ["access.log.2.gz"])
    [source] = store.list_sources()
    path = folder / "access.log.2.gz"
    assert content_size(path) - source.offset == 0  # the Runs page's lag; was the compressed size − the offset
    assert content_size(path) > path.stat().st_size
