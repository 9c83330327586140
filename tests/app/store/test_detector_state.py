"""Issue 44 item 2: the detector's correlation state is committed with the source's position and
restored by the next read that goes on from there, on SQLite and PostgreSQL: a brute force split
by `analyze` then `analyze --resume` gives the record one run gives; state saved by other rules is
discarded; what is saved stays within the rules' timespans."""

from __future__ import annotations

import json
from pathlib import Path

from logwarden.app.pipeline import Pipeline
from logwarden.app.run_options import RunOptions
from logwarden.app.store import open_store


def failed(i: int, ip: str = "203.0.113.7", hour: int = 10) -> str:
    return (f"Mar  1 {hour:02d}:00:{i:02d} web01 sshd[{1000 + i}]: Failed password for root from {ip} "
            f"port {30000 + i} ssh2\n")


def analyze(url: str, log: Path, *, resume: bool) -> None:
    with open_store(url) as store:
        Pipeline(store, None, RunOptions(rules_only=True, resume=resume)).analyze([log])


def brute_force(url: str) -> list[tuple]:
    """What an analyst sees of the store's brute-force records: rule, address, level, and the
    detection's count of lines (its description says how many lines matched)."""
    with open_store(url) as store:
        return sorted((r.detections, r.indicators.ips, r.risk_level, r.anomaly.split(".")[0])
                      for r in store.query_records() if r.category == "brute_force")


def the_brute_force(url: str):
    """The store's one brute-force record (unpacking fails when there are none or several)."""
    with open_store(url) as store:
        [record] = [r for r in store.query_records() if r.category == "brute_force"]
    return record


def test_a_brute_force_split_by_a_resume_gives_the_record_of_one_run(tmp_path, any_db_url):
    whole, split = tmp_path / "whole" / "auth.log", tmp_path / "split" / "auth.log"
    for path in (whole, split):
        path.parent.mkdir()
    whole.write_text("".join(failed(i) for i in range(8)))
    analyze(f"sqlite:///{tmp_path / 'whole.db'}", whole, resume=False)
    expected = brute_force(f"sqlite:///{tmp_path / 'whole.db'}")
    assert len(expected) == 1 and "8 matching lines" in expected[0][3]

    split.write_text("".join(failed(i) for i in range(4)))
    analyze(any_db_url, split, resume=False)
    assert brute_force(any_db_url) == []  # 4 failures: below the rule's 5
    with open(split, "a") as fh:
        fh.writelines(failed(i) for i in range(4, 8))
    analyze(any_db_url, split, resume=True)
    assert brute_force(any_db_url) == expected


def test_state_saved_by_other_rules_is_discarded(tmp_path, any_db_url):
    log = tmp_path / "auth.log"
    log.write_text("".join(failed(i) for i in range(4)))
    analyze(any_db_url, log, resume=False)
    with open_store(any_db_url) as store:
        [source] = store.list_sources()
        saved = json.loads(source.detector_state)
        saved["detector"]["rules"] = "another rule set"
        with store.transaction() as tx:
            tx.set_source(source.path, source.inode, offset=source.offset, line_no=source.line_no,
                          generation=source.generation, detector_state=json.dumps(saved))
    with open(log, "a") as fh:
        fh.writelines(failed(i) for i in range(4, 8))
    analyze(any_db_url, log, resume=True)
    assert brute_force(any_db_url) == []  # its 4 counts are not mixed with this run's


def test_a_re_analysis_from_line_1_does_not_count_the_lines_twice(tmp_path, any_db_url):
    log = tmp_path / "auth.log"
    log.write_text("".join(failed(i) for i in range(3)))
    analyze(any_db_url, log, resume=False)
    analyze(any_db_url, log, resume=False)  # the same 3 lines again: the saved 3 counts do not apply
    assert brute_force(any_db_url) == []


def test_the_saved_state_keeps_only_what_can_still_count(tmp_path, any_db_url):
    log = tmp_path / "auth.log"
    stale = [failed(i, ip=f"198.51.100.{i}", hour=1) for i in range(3)]  # beyond every shipped timespan (6 h at most)
    live = [failed(i, ip="203.0.113.7", hour=10) for i in range(3)]
    log.write_text("".join(stale + live))
    analyze(any_db_url, log, resume=False)
    with open_store(any_db_url) as store:
        [source] = store.list_sources()
    saved = json.loads(source.detector_state)
    assert saved["line_no"] == 6
    groups = [key for corr in saved["detector"]["correlations"].values() for key, _state in corr["groups"]]
    assert groups and not [key for key in groups if any(v.startswith("198.51.100.") for v in key)]
    assert any("203.0.113.7" in key for key in groups)


def test_a_burst_across_a_window_boundary_gives_one_record(tmp_path, any_db_url):
    """2,000-line windows (the default): the brute force fires in the first window's last lines and
    goes on in the second; the second window grows the first one's record instead of adding one."""
    log = tmp_path / "auth.log"
    cron = [f"Mar  1 10:00:00 web01 CRON[{i}]: (root) CMD (run-parts /etc/cron.hourly)\n" for i in range(1994)]
    log.write_text("".join(cron + [failed(i) for i in range(10)]))  # failures on lines 1995-2004
    analyze(any_db_url, log, resume=False)
    with open_store(any_db_url) as store:
        assert [(w.line_start, w.line_end) for w in store.list_windows()] == [(1, 2000), (2001, 2004)]
        [record] = [r for r in store.query_records() if r.category == "brute_force"]
        windows = store.list_windows()
    assert (record.line_start, record.line_end, record.line_count) == (1995, 2004, 10)
    assert record.evidence.line_numbers == list(range(1995, 2005)) and "10 matching lines" in record.anomaly
    assert all(record.id in w.record_ids for w in windows)  # both windows' lines are in its evidence


def test_a_burst_reported_before_a_resume_grows_the_same_record(tmp_path, any_db_url):
    log = tmp_path / "auth.log"
    log.write_text("".join(failed(i) for i in range(6)))  # fires (5) and goes on
    analyze(any_db_url, log, resume=False)
    [first] = brute_force(any_db_url)
    with open(log, "a") as fh:
        fh.writelines(failed(i) for i in range(6, 10))
    analyze(any_db_url, log, resume=True)
    record = the_brute_force(any_db_url)
    assert (record.line_start, record.line_end, record.line_count) == (1, 10, 10)
    assert "10 matching lines" in record.anomaly and brute_force(any_db_url) != [first]


def test_the_model_s_review_of_a_burst_s_later_window_keeps_the_whole_record(tmp_path, any_db_url):
    """The review rebuilds a window's records: a burst's record keeps every window's lines, and takes
    the model's level and texts."""
    from _fake_engine import NOTHING, FakeEngine

    good = ('{"findings":[{"evidence":["T1"],"anomaly":"failed logins from 203.0.113.7","category":"brute_force",'
            '"techniques":["T1110.001"],"risk_level":"critical"}],"recommendation":"Block 203.0.113.7."}')
    engine = FakeEngine(lambda request: NOTHING if "CRON" in request.user else good)
    log = tmp_path / "auth.log"
    cron = [f"Mar  1 10:00:00 web01 CRON[{i}]: (root) CMD (run-parts /etc/cron.hourly)\n" for i in range(1994)]
    log.write_text("".join(cron + [failed(i) for i in range(10)]))
    with open_store(any_db_url) as store:
        Pipeline(store, engine, RunOptions(llm_policy="signals", incidents=None)).analyze([log])
        [record] = [r for r in store.query_records() if r.category == "brute_force"]
    assert record.decided_by == "rules+llm" and record.risk_level == "critical"
    assert (record.line_start, record.line_end, record.line_count) == (1995, 2004, 10)


def sprayed(i: int) -> str:
    """A failure for a new account each line, from one address: brute force, password spray and,
    from the 20th account on, the host-wide spray rule."""
    return (f"Mar  1 10:00:{i:02d} web01 sshd[{1000 + i}]: Failed password for invalid user u{i} from "
            f"203.0.113.7 port {30000 + i} ssh2\n")


def test_a_host_wide_spray_firing_in_a_later_window_grows_the_brute_force_s_record(tmp_path, any_db_url):
    """10-line windows: the address's brute force fires in the first, the host-wide spray (20
    accounts) in the second, whose widest signal is then the spray's: the record keeps its id."""
    log = tmp_path / "auth.log"
    log.write_text("".join(sprayed(i) for i in range(30)))
    with open_store(any_db_url) as store:
        Pipeline(store, None, RunOptions(rules_only=True, window_max_lines=10)).analyze([log])
        records = [r for r in store.query_records() if r.category == "brute_force"]
    assert len(records) == 1, [(r.line_start, r.line_end, r.detections) for r in records]
    assert (records[0].line_start, records[0].line_end, records[0].line_count) == (1, 30, 30)
    assert "lw-ssh-spray-many-users" in records[0].detections


def test_a_burst_that_goes_on_in_the_rotated_file_grows_the_same_record(tmp_path, any_db_url):
    """auth.log read, then renamed to auth.log.1 and written to: `--resume` reads the rest under the
    rotated name, and the correlations go on with the source's state (they were keyed by the name
    the lines were read under, so the 4 more failures counted from zero)."""
    log = tmp_path / "auth.log"
    log.write_text("".join(failed(i) for i in range(6)))
    analyze(any_db_url, log, resume=False)
    rotated = log.rename(tmp_path / "auth.log.1")
    with open(rotated, "a") as fh:
        fh.writelines(failed(i) for i in range(6, 10))
    analyze(any_db_url, rotated, resume=True)
    record = the_brute_force(any_db_url)
    assert (record.line_start, record.line_end, record.line_count) == (1, 10, 10)
    assert "10 matching lines" in record.anomaly


def test_a_new_generation_s_burst_survives_a_restart(tmp_path, any_db_url):
    """The watcher's case: one process reads a file, the file is cut (copytruncate) and a new burst
    begins at earlier times; after a restart the burst goes on. The first content's detector (and
    its later clock) served the second and pruned its state away at the commit before the restart."""
    from logwarden.app.ingest.reader import TailRead

    log = tmp_path / "auth.log"
    log.write_text("".join(failed(i, ip="198.51.100.9", hour=11) for i in range(6)))
    inode = log.stat().st_ino
    with open_store(any_db_url) as store:
        pipeline = Pipeline(store, None, RunOptions(rules_only=True))
        pipeline.process(TailRead(log), source=str(log), inode=inode, generation=0)
        log.write_text("".join(failed(i) for i in range(6)))  # cut and written again: 10:00, before 11:00
        pipeline.process(TailRead(log), source=str(log), inode=inode, generation=1)
    with open(log, "a") as fh:
        fh.writelines(failed(i) for i in range(6, 10))
    size = len("".join(failed(i) for i in range(6)).encode())
    with open_store(any_db_url) as store:  # restarted
        Pipeline(store, None, RunOptions(rules_only=True)).process(
            TailRead(log, start_offset=size, start_line=7), source=str(log), inode=inode, generation=1)
        records = [r for r in store.query_records() if "203.0.113.7" in r.indicators.ips]
    assert [(r.line_start, r.line_end, r.line_count) for r in records] == [(1, 10, 10)]
