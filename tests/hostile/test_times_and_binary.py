"""Issue 43, items 1 (parse half) and 3: a forged time never reaches the store or stops a run, and
a few bytes of junk never hide a log."""

from __future__ import annotations

import json
from datetime import timezone

from _ingest_helpers import log_lines
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logwarden.app.ingest import read_lines
from logwarden.app.parse import parse_lines
from logwarden.app.parse.timestamps import EARLIEST_YEAR, LATEST_YEAR
from logwarden.cli.main import main as cli

# Each parser's time field, as a template: {Y} year, {M} month, {D} day, {Z} zone, {E} epoch.
TEMPLATES = {
    "access": '203.0.113.9 - - [{D}/Dec/{Y}:23:59:59 {Z}] "GET / HTTP/1.1" 200 12 "-" "curl"',
    "rfc5424": "<34>1 {Y}-{M}-{D}T23:59:59{Z2} host su - ID47 - 'su root' failed",
    "syslog": "{Y}-{M}-{D}T23:59:59{Z2} web1 sshd[1]: Failed password for root from 203.0.113.9 port 1 ssh2",
    "json": '{{"@timestamp": "{Y}-{M}-{D}T23:59:59{Z2}", "message": "x"}}',
    "cloudtrail": '{{"eventVersion": "1.08", "eventTime": "{Y}-{M}-{D}T23:59:59Z", "eventSource": '
                  '"iam.amazonaws.com", "eventName": "CreateUser", "awsRegion": "us-east-1"}}',
    "auditd": "type=USER_LOGIN msg=audit({E}:1): pid=1 uid=0 res=failed",
    "zeek": "{E}\tC1\t203.0.113.9\t1\t10.0.0.1\t22\ttcp",
    "apache_error": "[Sun Dec {D} 23:59:59 {Y}] [error] [client 203.0.113.9] File does not exist: /x",
    "windows": '{{"EventID": 4625, "TimeCreated": "{Y}-{M}-{D}T23:59:59{Z2}", "Computer": "dc"}}',
    "generic": "{Y}-{M}-{D}-23.59.59.000001 R01 RAS KERNEL FATAL x {E}",
}
YEARS = st.sampled_from(["0000", "0001", "1969", "1970", "2024", "2100", "2101", "9999", "99999", "-1"])
NUMS = st.sampled_from(["00", "01", "12", "13", "31", "32", "99"])
ZONES = st.sampled_from(["-1400", "+1400", "+0000", "-9999", "+2400", "Z"])
EPOCHS = st.sampled_from(["0", "-1", "1e15", "1e400", "nan", "inf", "99999999999999999999", "1700000000",
                          "1700000000.5", "-62135596800", "253402300800"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fmt=st.sampled_from(sorted(TEMPLATES)), year=YEARS, month=NUMS, day=NUMS, zone=ZONES, epoch=EPOCHS)
def test_every_parsers_time_is_in_range_or_absent(fmt, year, month, day, zone, epoch):
    z2 = "Z" if zone == "Z" else f"{zone[:3]}:{zone[3:]}"
    text = TEMPLATES[fmt].format(Y=year, M=month, D=day, Z=zone, Z2=z2, E=epoch)
    (event,) = parse_lines(log_lines([text]), fmt)
    assert event.raw == text
    if event.ts is not None:
        utc = event.ts.astimezone(timezone.utc) if event.ts.tzinfo else event.ts
        assert EARLIEST_YEAR <= utc.year <= LATEST_YEAR


def test_a_line_dated_9999_at_minus_14_is_kept_undated_with_a_note():
    text = '203.0.113.9 - - [31/Dec/9999:23:59:59 -1400] "GET / HTTP/1.1" 200 12 "-" "curl"'
    (event,) = parse_lines(log_lines([text]), "access")
    assert event.format == "access" and event.ts is None
    assert event.fields["timestamp_invalid"] == "9999-12-31T23:59:59-14:00"


def test_one_forged_date_does_not_stop_the_run(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "access.log").write_text('203.0.113.9 - - [31/Dec/9999:23:59:59 -1400] "GET / HTTP/1.1" 200 1 "-" "x"\n')
    (logs / "auth.log").write_text("".join(
        f"2024-03-03T10:00:{i:02d}+00:00 web1 sshd[1]: Failed password for root from 198.51.100.4 port {4000 + i} "
        "ssh2\n" for i in range(30)))
    done = CliRunner().invoke(cli, ["analyze", str(logs), "--rules-only", "--json", "--final",
                                    "--db", f"sqlite:///{tmp_path / 'lw.db'}"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout[done.stdout.index("{"):])
    assert report["metrics"]["lines"] == 31
    assert any(r["category"] == "brute_force" for r in report["records"])


def test_a_since_without_a_utc_time_is_a_usage_error(tmp_path):
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    log = tmp_path / "auth.log"
    log.write_text("2024-03-03T10:00:00+00:00 web1 sshd[1]: Accepted password for bob from 10.0.0.1 port 1 ssh2\n")
    assert CliRunner().invoke(cli, ["analyze", str(log), "--rules-only", "--final", "--db", db]).exit_code == 0
    for command in (["records", "list"], ["export", "--format", "jsonl"], ["incidents", "list"], ["report", "--html", "-"]):
        done = CliRunner().invoke(cli, [*command, "--since", "0001-01-01T00:00:00+14:00", "--db", db])
        assert done.exit_code == 2 and "no UTC equivalent" in done.output, (command, done.output)
    backwards = CliRunner().invoke(cli, ["records", "list", "--since", "2026-01-02", "--until", "2026-01-01",
                                         "--db", db])
    assert backwards.exit_code == 2 and "before --since" in backwards.output


def _auth_lines(n: int) -> bytes:
    return b"".join(b"Mar  3 10:00:%02d h sshd[1]: Failed password for root from 10.0.0.%d port 22 ssh2\n"
                    % (i % 60, i % 250) for i in range(n))


def test_3kb_of_0xff_near_the_top_does_not_hide_an_auth_log(tmp_path):
    path = tmp_path / "auth.log"
    path.write_bytes(_auth_lines(2) + b"Mar  3 10:00:02 h logger: " + b"\xff" * 3000 + b"\n" + _auth_lines(50))
    lines = list(read_lines(path))
    assert len(lines) == 53 and all(hasattr(line, "text") for line in lines)
    assert lines[2].text.count("\ufffd") == 3000


def test_junk_filling_the_whole_head_of_a_large_log_does_not_hide_it(tmp_path):
    path = tmp_path / "auth.log"
    junk = b"".join(b"x: " + b"\xff" * 3000 + b"\n" for _ in range(4))  # > the 8 KiB head
    path.write_bytes(junk + _auth_lines(2000))
    lines = list(read_lines(path))
    assert len(lines) == 2004 and all(hasattr(line, "text") for line in lines)


def test_a_file_that_is_mostly_not_text_is_still_binary(tmp_path):
    path = tmp_path / "core.dump"
    path.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 400)
    (row,) = list(read_lines(path))
    assert "binary file skipped" in row.message
