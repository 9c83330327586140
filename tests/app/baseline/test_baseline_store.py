"""The baseline kept in the store: it survives runs, several hosts extend one baseline (SQLite and a
real PostgreSQL, two processes flushing at once lose nothing), rows are bounded, and the CLI
learns, shows, exports, imports, resets, accepts and mutes — with the pipeline judging between."""

from __future__ import annotations

import json
import multiprocessing
import random

from click.testing import CliRunner

from logwarden.app.baseline import Baseline
from logwarden.app.baseline.learn import learn_paths
from logwarden.app.events import LogLine
from logwarden.app.mine import SourceMiner, windows
from logwarden.app.parse import parse_lines
from logwarden.app.store import RecordFilter, open_store
from logwarden.cli.main import main

STAMP = "10/Mar/2024:06:55:46 +0000"


def line(ip: str, target: str) -> str:
    return f'{ip} - - [{STAMP}] "GET {target} HTTP/1.1" 200 512 "-" "Mozilla/5.0"'


def normal(rng: random.Random, ip: str) -> str:
    return line(ip, f"/app/view.php?page={rng.randint(1, 40)}&lang={rng.choice(['es', 'en', 'fr'])}")


def observe(baseline: Baseline, lines: list[str], source: str = "access.log") -> list:
    events = parse_lines([LogLine(source, 0, 0, i, t) for i, t in enumerate(lines, 1)], "access")
    miner = SourceMiner()
    return [d for w in windows(events, miner, source=source, inode=0, fmt="access") for d in baseline.observe(w, miner)]


def flush(store, baseline: Baseline) -> None:
    with store.transaction() as tx:
        baseline.flush(tx)


def _host_learns(url: str, host: int) -> None:
    """One watcher on one host: learns its own clients' requests and flushes, many times."""
    store, rng = open_store(url), random.Random(host)
    baseline = Baseline(store, mode="learn")
    for batch in range(10):
        observe(baseline, [normal(rng, f"10.{host}.{batch * 20 + i}.1") for i in range(20)])
        flush(store, baseline)
    store.close()


def test_two_hosts_extend_one_baseline_at_once(any_db_url):
    store = open_store(any_db_url)
    context = multiprocessing.get_context("spawn")
    hosts = [context.Process(target=_host_learns, args=(any_db_url, host)) for host in (1, 2)]
    for process in hosts:
        process.start()
    for process in hosts:
        process.join(timeout=300)
        assert process.exitcode == 0
    [row] = [r for r in store.iter_baseline(kind="web")]
    assert row["data"]["requests"] == 2 * 10 * 20  # no flush lost another's requests
    assert row["clients"] >= 64  # the site's sketch saw both hosts' clients (exact up to 64)
    site = next(store.iter_baseline(kind="web-site"))
    assert site["data"]["requests"] == 400
    fresh = Baseline(store, mode="judge")  # a third host reads what both learned: warm, nothing odd
    assert observe(fresh, [normal(random.Random(9), "10.9.9.9")]) == []
    assert [d.kind for d in observe(fresh, [line("10.9.9.8", "/app/view.php?page=3&lang=es&x=1")])] == ["web-param"]


def test_what_a_run_learned_is_there_for_the_next_run(tmp_path):
    url = f"sqlite:///{tmp_path / 'lw.db'}"
    rng = random.Random(4)
    first = open_store(url)
    baseline = Baseline(first, mode="judge")
    observe(baseline, [normal(rng, f"10.0.{i}.1") for i in range(100)])
    flush(first, baseline)
    first.close()
    again = Baseline(open_store(url), mode="judge")
    [deviation] = observe(again, [line("203.0.113.1", "/app/view.php?page=3&lang=es&debug=1")])
    assert "in 100 requests from" in deviation.text


def test_a_scope_keeps_at_most_its_row_cap(tmp_path, monkeypatch):
    from logwarden.app.store import writes

    monkeypatch.setattr(writes, "BASELINE_ROWS_MAX", 50)
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    baseline = Baseline(store, mode="learn")
    observe(baseline, [line(f"10.{i // 200}.{i % 200}.1", f"/p{i}/x.php?a=1") for i in range(400)])
    flush(store, baseline)
    assert sum(1 for _ in store.iter_baseline(kind="web")) == 50


def _write_access(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_learn_then_analyze_then_accept_and_mute(tmp_path):
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    rng = random.Random(5)
    (tmp_path / "last-week").mkdir()  # access.log.1 is access.log's history: one site
    history = _write_access(tmp_path / "last-week" / "access.log.1",
                            [normal(rng, f"10.{i // 100}.{i % 100}.1") for i in range(300)])
    today = tmp_path / "today"
    today.mkdir()
    _write_access(today / "access.log", [normal(rng, "10.2.0.1"), line("203.0.113.7", "/app/view.php?page=2&lang=es&dbg=on")])
    runner = CliRunner()
    learned = runner.invoke(main, ["baseline", "learn", str(history), "--db", db, "--json"])
    assert learned.exit_code == 0, learned.output
    assert json.loads(learned.stdout)["lines"] == 300
    result = runner.invoke(main, ["analyze", str(today), "--rules-only", "--db", db, "--json"])
    assert result.exit_code == 0, result.output
    [record] = [r for r in json.loads(result.stdout)["records"] if "lw-baseline-web-param" in r["detections"]]
    assert record["risk_level"] == "low" and "'dbg' never seen" in record["anomaly"]
    accepted = runner.invoke(main, ["baseline", "accept", record["id"][:12], "--db", db, "--json"])
    assert accepted.exit_code == 0, accepted.output
    assert "dbg" in json.loads(accepted.stdout)["accepted"][0]
    again = runner.invoke(main, ["analyze", str(today), "--rules-only", "--db", db, "--json"])
    assert not any("lw-baseline-web-param" in r["detections"] for r in json.loads(again.stdout)["records"])

    _write_access(today / "access.log", [line("203.0.113.8", "/app/view.php?page=2&lang=es&trace=1")])
    ref = "web|access.log|GET%20/app/view.php|name|trace"
    assert runner.invoke(main, ["baseline", "mute", ref, "--db", db]).exit_code == 0
    quiet = runner.invoke(main, ["analyze", str(today), "--rules-only", "--db", db, "--json"])
    assert not any(r["detections"] for r in json.loads(quiet.stdout)["records"]), quiet.stdout
    assert ref in json.loads(runner.invoke(main, ["baseline", "show", "--db", db, "--json"]).stdout)["muted"]


def test_cli_export_import_reset_round_trip(tmp_path):
    db, other = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    rng = random.Random(6)
    history = _write_access(tmp_path / "h.log", [normal(rng, f"10.3.{i}.1") for i in range(60)])
    runner = CliRunner()
    assert runner.invoke(main, ["baseline", "learn", str(history), "--db", db]).exit_code == 0
    exported = tmp_path / "baseline.jsonl"
    assert runner.invoke(main, ["baseline", "export", "--db", db, "--out", str(exported)]).exit_code == 0
    imported = runner.invoke(main, ["baseline", "import", str(exported), "--db", other, "--json"])
    assert imported.exit_code == 0, imported.output
    original, copy = open_store(db), open_store(other)
    assert list(original.iter_baseline()) == list(copy.iter_baseline())
    twice = runner.invoke(main, ["baseline", "import", str(exported), "--db", other])  # what both know adds up
    assert twice.exit_code == 0 and next(copy.iter_baseline(kind="web"))["data"]["requests"] == 120
    shown = json.loads(runner.invoke(main, ["baseline", "show", "--db", other, "--json"]).stdout)
    assert {k["kind"] for k in shown["kinds"]} >= {"web", "web-site"}
    assert runner.invoke(main, ["baseline", "reset", "--db", other]).exit_code == 2  # --yes is required
    assert runner.invoke(main, ["baseline", "reset", "--db", other, "--yes"]).exit_code == 0
    assert list(copy.iter_baseline()) == []


def test_cli_import_refuses_a_foreign_file_without_a_traceback(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "web", "scope": "s", "key": "GET /", "data": [1, 2]}\n')
    result = CliRunner().invoke(main, ["baseline", "import", str(bad), "--db", f"sqlite:///{tmp_path / 'x.db'}"])
    assert result.exit_code == 2 and "not a logwarden baseline row" in result.output
    assert "Traceback" not in result.output


def test_learning_makes_no_records_and_reads_compressed_history(tmp_path):
    import gzip

    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    rng = random.Random(7)
    (tmp_path / "logs").mkdir()
    with gzip.open(tmp_path / "logs" / "access.log.1.gz", "wt") as handle:
        handle.write("\n".join(normal(rng, f"10.4.{i}.1") for i in range(50)) + "\n")
    learned = learn_paths(store, [tmp_path / "logs"])
    assert (learned.files, learned.lines, learned.errors) == (1, 50, 0)
    assert store.count_records(RecordFilter()) == 0 and store.list_sources() == []
    assert next(store.iter_baseline(kind="web"))["data"]["requests"] == 50
