"""Message kinds are learned per program, and per file for lines that name no program: one
application's long history never makes another program-less log's messages novel (loghub's
HealthApp, Spark and Zookeeper samples in one store did), while its own new kind of message is."""

from __future__ import annotations

from datetime import datetime, timedelta

from logwarden.app.baseline import Baseline
from logwarden.app.events import LogLine
from logwarden.app.mine import SourceMiner, windows
from logwarden.app.parse import parse_lines

START = datetime(2024, 3, 10, 6, 0, 0)


def stamped(i: int, text: str) -> str:
    return f"{(START + timedelta(minutes=i)):%Y-%m-%d %H:%M:%S},{i % 1000:03d} INFO {text}"


def observe(baseline: Baseline, source: str, lines: list[str]) -> list:
    events = parse_lines([LogLine(source, 0, 0, i, t) for i, t in enumerate(lines, 1)], "generic")
    miner = SourceMiner()
    return [d for w in windows(events, miner, source=source, inode=0, fmt="generic", max_gap_s=1e9)
            for d in baseline.observe(w, miner)]


def novelties(deviations: list) -> list:
    return [d for d in deviations if d.rule_id == "lw-baseline-template"]


def test_a_program_less_logs_history_is_its_own():
    baseline = Baseline(None)
    history = [stamped(i, f"worker {i % 7} finished job {i} in {i % 90} ms") for i in range(6000)]  # 4 days
    assert novelties(observe(baseline, "/var/log/app.log.1", history)) == []
    other = [stamped(6000 + i, f"cache region {i % 5} evicted {i} entries") for i in range(50)]
    assert novelties(observe(baseline, "/var/log/other.log", other)) == []  # another file: not app.log's history
    own = [stamped(7000 + i, f"cache region {i % 5} evicted {i} entries") for i in range(50)]
    assert novelties(observe(baseline, "/var/log/app.log", own))  # app.log (rotated or not) never wrote these
