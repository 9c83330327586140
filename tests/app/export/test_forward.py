"""Forwarders against real servers on loopback: an HTTP server standing in for Splunk HEC (`_hec.py`:
token, path and JSON envelope checked), and Debian's rsyslog receiving RFC 5424 over UDP and TCP
(`apt-get install -y rsyslog`), whose parsed fields are read back from a JSON output file."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from _hec import TOKEN, start_hec
from _store_helpers import make_record
from test_export import HOSTILE, parse_cef

from logwarden.app.export import ForwardError, export_records, forward_splunk_hec, forward_syslog
from logwarden.app.export.syslog import format_5424, parse_syslog_url
from logwarden.errors import ConfigError
from logwarden.schemas import Indicators


@pytest.fixture()
def hec():
    server = start_hec()
    yield server
    server.close()


def _records(n: int) -> list:
    return [make_record(line_start=i * 10 + 1, line_end=i * 10 + 9, anomaly=f"{HOSTILE} #{i}") for i in range(n)]


def test_hec_delivers_every_event_in_batches(hec):
    records = _records(250)
    tally = forward_splunk_hec(export_records(records, "splunk-hec"), hec.url, token=TOKEN, batch=100)
    assert tally.counts == {"accepted": 250} and hec.requests == 3
    assert [e["event"]["id"] for e in hec.events] == [r.id for r in records]
    assert hec.events[0]["event"]["anomaly"] == records[0].anomaly


def test_hec_retries_server_errors(hec):
    hec.fail_next = 2
    assert forward_splunk_hec(export_records(_records(3), "splunk-hec"), hec.url, token=TOKEN,
                              backoff_s=0).delivered == 3
    assert hec.requests == 3 and len(hec.events) == 3


def test_hec_gives_up_after_retries(hec):
    hec.fail_next = 10
    with pytest.raises(ForwardError, match="failed after 3 attempts.*HTTP 503"):
        forward_splunk_hec(export_records(_records(1), "splunk-hec"), hec.url, token=TOKEN, retries=2, backoff_s=0)


def test_hec_bad_token_is_a_config_error_without_retry(hec):
    with pytest.raises(ConfigError, match="rejected the token.*403"):
        forward_splunk_hec(export_records(_records(1), "splunk-hec"), hec.url, token="wrong", backoff_s=0)
    assert hec.requests == 1 and hec.events == []


def test_hec_unreachable_and_bad_url():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ForwardError, match="ConnectError"):
        forward_splunk_hec(['{"time":1,"event":{},"sourcetype":"x"}'], f"http://127.0.0.1:{port}", token=TOKEN,
                           retries=1, backoff_s=0)
    with pytest.raises(ConfigError, match="Bad Splunk HEC URL"):
        forward_splunk_hec([], "ftp://splunk", token=TOKEN)


# -- rsyslog -----------------------------------------------------------------------------------

RSYSLOG_CONF = """
global(workDirectory="{work}" maxMessageSize="64k" parser.escapeControlCharactersOnReceive="off")
module(load="imudp")
module(load="imtcp")
input(type="imudp" address="127.0.0.1" port="{udp}" ruleset="out")
input(type="imtcp" address="127.0.0.1" port="{tcp}" ruleset="out")
template(name="fields" type="list" option.jsonf="on") {{
  property(outname="facility" name="syslogfacility" format="jsonf")
  property(outname="severity" name="syslogseverity" format="jsonf")
  property(outname="version" name="protocol-version" format="jsonf")
  property(outname="timestamp" name="timereported" dateFormat="rfc3339" format="jsonf")
  property(outname="hostname" name="hostname" format="jsonf")
  property(outname="app" name="app-name" format="jsonf")
  property(outname="procid" name="procid" format="jsonf")
  property(outname="msgid" name="msgid" format="jsonf")
  property(outname="sd" name="structured-data" format="jsonf")
  property(outname="msg" name="msg" format="jsonf")
}}
ruleset(name="out") {{ action(type="omfile" file="{out}" template="fields") }}
"""


def _free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Rsyslog:
    def __init__(self, folder: Path) -> None:
        self.udp, self.tcp = _free_port(socket.SOCK_DGRAM), _free_port(socket.SOCK_STREAM)
        self.out = folder / "received.jsonl"
        work = folder / "work"
        work.mkdir()
        conf = folder / "rsyslog.conf"
        conf.write_text(RSYSLOG_CONF.format(work=work, udp=self.udp, tcp=self.tcp, out=self.out))
        self.proc = subprocess.Popen([shutil.which("rsyslogd") or "/usr/sbin/rsyslogd", "-n", "-f", str(conf),
                                      "-i", str(folder / "rsyslogd.pid")], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self._wait_for_tcp()

    def _wait_for_tcp(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.proc.stdout.read().decode()
            try:
                socket.create_connection(("127.0.0.1", self.tcp), timeout=1).close()
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("rsyslogd did not start listening")

    def received(self, count: int, *, app: str = "logwarden") -> list[dict]:
        """Wait until `count` messages from `app` were written (rsyslog writes asynchronously)."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            rows = self._rows(app)
            if len(rows) >= count:
                return rows
            time.sleep(0.05)
        raise AssertionError(f"rsyslog wrote {len(self._rows(app))} of {count} messages")

    def _rows(self, app: str) -> list[dict]:
        if not self.out.exists():
            return []
        rows = [json.loads(line) for line in self.out.read_text("utf-8").splitlines() if line.strip()]
        return [row for row in rows if row["app"] == app]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self.proc.stdout.close()


@pytest.fixture()
def rsyslog(tmp_path):
    assert shutil.which("rsyslogd") or Path("/usr/sbin/rsyslogd").exists(), \
        "rsyslog is required: apt-get install -y rsyslog"
    server = Rsyslog(tmp_path)
    yield server
    server.stop()


def _udp_ready(rsyslog: Rsyslog) -> None:
    """UDP has no handshake: probe until rsyslog shows it is reading the port."""
    for attempt in range(100):
        forward_syslog([f"probe {attempt}"], f"syslog://127.0.0.1:{rsyslog.udp}", app_name="probe")
        try:
            rsyslog.received(1, app="probe")
            return
        except AssertionError:
            continue


def _cef_lines() -> tuple[list, list[str]]:
    records = [make_record(line_start=1, line_end=5, risk_level="critical", anomaly=HOSTILE,
                           indicators=Indicators(users=["do=main\\us er"], ips=["203.0.113.9"])),
               make_record(line_start=6, line_end=9, risk_level="low", anomaly="plain ascii"),
               make_record(line_start=10, line_end=12, risk_level="medium", anomaly="mittel ü")]
    return records, list(export_records(records, "cef"))


@pytest.mark.parametrize("scheme", ["syslog", "syslog+tcp", "syslog+tcp-newline"])
def test_syslog_cef_reaches_rsyslog_intact(rsyslog, scheme):
    records, lines = _cef_lines()
    if scheme == "syslog":
        _udp_ready(rsyslog)
        url = f"syslog://127.0.0.1:{rsyslog.udp}"
    else:
        url = f"syslog+tcp://127.0.0.1:{rsyslog.tcp}" + ("?framing=newline" if scheme.endswith("newline") else "")
    assert forward_syslog(lines, url + ("&" if "?" in url else "?") + "facility=local4").counts == {"sent": 3}
    rows = rsyslog.received(3)
    assert len(rows) == 3
    by_span = {parse_cef(row["msg"])[1]["externalId"]: row for row in rows}
    for record, line in zip(records, lines):
        row = by_span[record.id]
        assert row["msg"] == line
        assert (row["version"], row["facility"], row["app"], row["procid"]) == ("1", "20", "logwarden",
                                                                                   str(os.getpid()))
        assert row["sd"] == "-" and row["hostname"]
        expected_severity = {"critical": "2", "low": "5", "medium": "4"}[record.risk_level]
        assert row["severity"] == expected_severity
    _, ext = parse_cef(by_span[records[0].id]["msg"])
    assert ext["msg"] == HOSTILE and ext["suser"] == "do=main\\us er"


def test_octet_counting_keeps_multiline_messages_whole(rsyslog):
    text = "first line\nsecond line\twith tab"
    assert forward_syslog([text, "next"], f"syslog+tcp://127.0.0.1:{rsyslog.tcp}").delivered == 2
    rows = rsyslog.received(2)
    assert [row["msg"] for row in rows] == [text, "next"]


def test_syslog_unreachable_tcp_and_bad_urls():
    with pytest.raises(ForwardError, match="Cannot send syslog"):
        forward_syslog(["x"], f"syslog+tcp://127.0.0.1:{_free_port(socket.SOCK_STREAM)}")
    for bad in ("http://host:514", "syslog://", "syslog+tcp://h:514?framing=xml", "syslog://h?facility=mail2"):
        with pytest.raises(ConfigError):
            parse_syslog_url(bad)


def test_rfc5424_header_fields():
    from datetime import datetime, timezone
    message = format_5424("CEF:0|a|b|1|r|n|9|msg=x", facility=16, severity=2, hostname="my host\u00e9",
                          app_name="logwarden", now=datetime(2026, 11, 29, 10, 0, 0, 123456, tzinfo=timezone.utc))
    pri_version, timestamp, hostname, app, procid, msgid, sd, body = message.decode().split(" ", 7)
    assert (pri_version, timestamp, hostname, app) == ("<130>1", "2026-11-29T10:00:00.123456Z", "myhost", "logwarden")
    assert (procid, msgid, sd, body) == (str(os.getpid()), "-", "-", "CEF:0|a|b|1|r|n|9|msg=x")
    assert format_5424("ü", facility=1, severity=5, hostname="h").decode().endswith(" - - ü")
    assert format_5424("ü", facility=1, severity=5, hostname="h", bom=True).decode().endswith(" - - \ufeffü")
