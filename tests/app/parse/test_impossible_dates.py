"""Impossible syslog dates (issue 16, defect 6): `Feb 30`, or `Feb 29` when the assumed year is not a
leap year, keep the line's syslog parse (host, program, message), so the detectors still run."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from _ingest_helpers import log_lines
from click.testing import CliRunner

from logwarden.app.parse import parse_lines
from logwarden.app.parse.timestamps import YearGuesser
from logwarden.cli.main import main as cli

NON_LEAP_REF = datetime(2026, 3, 10, 12, 0, 0)


def failed_logins(day: str, n: int = 20) -> list[str]:
    return [f"Feb {day} 10:00:{i:02d} web01 sshd[{900 + i}]: Failed password for root from 198.51.100.4 "
            f"port {40000 + i} ssh2" for i in range(n)]


def test_feb_29_in_a_non_leap_reference_year_gets_the_last_leap_year():
    ts = YearGuesser(NON_LEAP_REF).build(2, 29, 10, 0, 0)
    assert ts == datetime(2024, 2, 29, 10, 0, 0)


@pytest.mark.parametrize("day", ["29", "30", "31"])
def test_impossible_dates_keep_the_syslog_parse(day):
    events = list(parse_lines(log_lines(failed_logins(day, 3)), "syslog", reference_time=NON_LEAP_REF))
    assert [e.format for e in events] == ["syslog"] * 3
    assert {e.program for e in events} == {"sshd"} and {e.host for e in events} == {"web01"}
    assert events[0].message.startswith("Failed password for root")
    if day != "29":
        assert events[0].ts is None and events[0].fields["timestamp_invalid"] == f"Feb {day} 10:00:00"


def test_the_impossible_timestamp_does_not_leak_into_the_message():
    line = "Apr 31 23:59:59 web01 sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; COMMAND=/bin/sh"
    (event,) = parse_lines(log_lines([line]), "syslog", reference_time=NON_LEAP_REF)
    assert event.program == "sudo" and event.message.strip().startswith("alice :")


@pytest.mark.parametrize("day", ["29", "30"])
def test_twenty_failed_logins_on_an_impossible_date_still_make_a_record(tmp_path, day):
    log = tmp_path / "auth.log"
    log.write_text("\n".join(failed_logins(day)) + "\n")
    stamp = NON_LEAP_REF.timestamp()
    import os

    os.utime(log, (stamp, stamp))  # the year the dates are read in is the file's: 2026, not a leap year
    result = CliRunner().invoke(cli, ["analyze", str(log), "--rules-only", "--json",
                                      "--db", f"sqlite:///{tmp_path / 'lw.db'}"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout[result.stdout.index("{"):])
    assert report["metrics"]["formats"][str(log)].startswith("syslog")
    assert any(r["category"] == "brute_force" for r in report["records"])
