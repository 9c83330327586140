"""Issue 44 item 2: the detector's correlation state is committed with the source's position and
restored by the next read that goes on from there, on SQLite and PostgreSQL: a brute force split
by `analyze` then `analyze --resume` gives the record one run gives; state saved by other rules is
discarded; what is saved stays within the rules' timespans."""

from __future__ import annotations

import json
from pathlib import Path

from logwarden.app.pipeline import Pipeline, RunOptions
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
    with open_store(any_db_url) as store:
        [record] = [r for r in store.query_records() if r.category == "brute_force"]
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
