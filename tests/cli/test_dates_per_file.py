"""Issue 45 item 4: a year-less syslog file's year comes from that file alone (its own year-stating
lines, its rotation's newer file, its modification time), never from other files of the run, and
no date lands more than a day after now. Real lines of LogHub's OpenSSH_2k (Dec 10, no year) and
Linux_2k (2005: ftpd repeats its stamp with the year) through `analyze --rules-only --json`."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from logwarden.cli.main import main as cli

OPENSSH = [  # OpenSSH_2k.log lines 30-36
    "Dec 10 07:13:56 LabSZ sshd[24227]: message repeated 5 times: [ Failed password for root from 5.36.59.76 port 42393 ssh2]",
    "Dec 10 07:13:56 LabSZ sshd[24227]: Disconnecting: Too many authentication failures for root [preauth]",
    "Dec 10 07:13:56 LabSZ sshd[24227]: PAM 5 more authentication failures; logname= uid=0 euid=0 tty=ssh ruser= "
    "rhost=5.36.59.76.dynamic-dsl-ip.omantel.net.om  user=root",
    "Dec 10 07:13:56 LabSZ sshd[24227]: PAM service(sshd) ignoring max retries; 6 > 3",
    "Dec 10 07:27:50 LabSZ sshd[24235]: pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= "
    "rhost=112.95.230.3  user=root",
    "Dec 10 07:27:52 LabSZ sshd[24235]: Failed password for root from 112.95.230.3 port 45378 ssh2",
    "Dec 10 07:27:52 LabSZ sshd[24235]: Received disconnect from 112.95.230.3: 11: Bye Bye [preauth]",
]
PAM_FAILURES = [  # Linux_2k.log lines 4-13
    f"Jun 15 02:04:59 combo sshd(pam_unix)[{pid}]: authentication failure; logname= uid=0 euid=0 tty=NODEVssh ruser= "
    "rhost=220-135-151-1.hinet-ip.hinet.net  user=root"
    for pid in (20882, 20884, 20883, 20885, 20886, 20892, 20893, 20896, 20897, 20898)
]
FTPD_2005 = ("Jun 17 07:07:00 combo ftpd[29504]: connection from 24.54.76.216 (24-54-76-216.bflony.adelphia.net) "
             "at Fri Jun 17 07:07:00 2005")  # Linux_2k.log line 83
# An unrelated file of the same run whose lines state 2026
ACCESS_2026 = ('203.0.113.9 - - [01/Dec/2026:10:00:00 +0000] "GET /index.php?id=1%27%20UNION%20SELECT%201,2,3-- HTTP/1.1" '
               '200 512 "-" "sqlmap/1.7"')


def _write(path: Path, lines: list[str], mtime: datetime) -> None:
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (mtime.timestamp(), mtime.timestamp()))


def _analyze(folder: Path, tmp_path: Path) -> dict:
    result = CliRunner().invoke(cli, ["analyze", str(folder), "--rules-only", "--json",
                                      "--db", f"sqlite:///{tmp_path / 'lw.db'}"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _record_times(out: dict, name: str) -> set[datetime]:
    times = {datetime.fromisoformat(r[key]) for r in out["records"] if r["source"].endswith(name)
             for key in ("first_ts", "last_ts")}
    assert times, f"no record of {name}"
    return {t.replace(tzinfo=None) for t in times}


def _reason(out: dict, name: str) -> str:
    [reason] = [why for source, why in out["metrics"]["years"].items() if source.endswith(name)]
    return reason


def test_each_syslog_file_gets_its_own_year_not_the_runs(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    checked_out = datetime(2026, 12, 7, 11, 0)  # the day the issue was filed: all three copied then
    _write(folder / "OpenSSH_2k.log", OPENSSH, checked_out)
    _write(folder / "Linux_2k.log", PAM_FAILURES + [FTPD_2005], checked_out)
    _write(folder / "access.log", [ACCESS_2026], checked_out)
    out = _analyze(folder, tmp_path)
    # Dec 10 after a file last written Dec 7, 2026 is Dec 10, 2025 (was 2026-12-10, from access.log's year)
    assert {t.date() for t in _record_times(out, "OpenSSH_2k.log")} == {datetime(2025, 12, 10).date()}
    assert "modification time (2026-12-07)" in _reason(out, "OpenSSH_2k.log")
    # The 2005 log says 2005 itself (was 2026, borrowed from access.log)
    assert {t.year for t in _record_times(out, "Linux_2k.log")} == {2005}
    assert "2005-06-17" in _reason(out, "Linux_2k.log")


def test_no_year_less_date_lands_after_tomorrow_even_when_the_mtime_does(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    _write(folder / "OpenSSH_2k.log", OPENSSH, datetime.now() + timedelta(days=400))  # a clock set wrong
    _write(folder / "access.log", [ACCESS_2026], datetime.now())
    out = _analyze(folder, tmp_path)
    latest = datetime.now() + timedelta(days=1)
    assert max(_record_times(out, "OpenSSH_2k.log")) <= latest
    assert "after now" in _reason(out, "OpenSSH_2k.log")


def test_a_rotated_file_ends_before_its_newer_file_begins(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    copied = datetime(2025, 12, 31)  # both copied then: the mtime alone puts auth.log.1 after auth.log
    _write(folder / "auth.log", PAM_FAILURES, copied)  # begins Jun 15, 2025
    _write(folder / "auth.log.1", OPENSSH, copied)  # written before Jun 15, 2025: Dec 10, 2024
    _write(folder / "access.log", [ACCESS_2026], copied)
    out = _analyze(folder, tmp_path)
    assert {t.year for t in _record_times(out, "auth.log")} == {2025}
    assert {t.date() for t in _record_times(out, "auth.log.1")} == {datetime(2024, 12, 10).date()}
    assert "first line of auth.log" in _reason(out, "auth.log.1")


def test_a_stated_time_after_tomorrow_is_not_believed_the_line_is_kept_undated(tmp_path):
    # a wrong clock or a forged stamp (a time in 2030 sorts an attack out of every time filter): the
    # injection is still found, and nothing is dated after tomorrow
    folder = tmp_path / "logs"
    folder.mkdir()
    forged = [ACCESS_2026.replace("01/Dec/2026", "03/Mar/2030").replace("id=1", f"id={n}") for n in range(3)]
    _write(folder / "access.log", forged, datetime.now())
    out = _analyze(folder, tmp_path)
    attacks = [r for r in out["records"] if r["category"] == "web_attack"]
    assert attacks, out["records"]
    latest = datetime.now() + timedelta(days=1)
    assert all(datetime.fromisoformat(r[key]).replace(tzinfo=None) <= latest
               for r in out["records"] for key in ("first_ts", "last_ts") if r.get(key))
