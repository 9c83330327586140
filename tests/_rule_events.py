"""Events as the parsers make them from real-format lines (docs/FIELDS.md), and the small helpers the
rule tests share."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

from logwarden.app.events import Event, LogLine, Signal
from logwarden.app.parse import parse_lines

T0 = datetime(2024, 3, 10, 6, 55, 46)


UTC0 = datetime(2024, 3, 10, 6, 55, 46, tzinfo=timezone.utc)


_SYSLOG = re.compile(r"^(\w{3} +\d+ [\d:]{8}) (\S+) ([^\[:]+)(?:\[(\d+)\])?: (.*)$")


_ACCESS = re.compile(r'^(\S+) (\S+) (\S+) \[([^\]]+)\] "([^"]*)" (\d{3}) (\d+|-) "([^"]*)" "([^"]*)"$')


def syslog(line: str, line_no: int = 1, source: str = "auth.log") -> Event:
    """The real syslog parser's event (it also pulls sshd/PAM/sudo addresses and accounts out of the message)."""
    stamp = _SYSLOG.match(line).group(1)
    reference = datetime.strptime(f"2024 {stamp}", "%Y %b %d %H:%M:%S") + timedelta(days=1)
    [event] = parse_lines([LogLine(source=source, inode=0, offset=0, line_no=line_no, text=line)], "syslog",
                          reference_time=reference)
    return event


def access(line: str, line_no: int = 1, source: str = "access.log") -> Event:
    ip, ident, user, stamp, request, status, size, referrer, agent = _ACCESS.match(line).groups()
    parts = request.split(" ")
    fields = {"src_ip": ip, "ident": ident, "status": int(status), "bytes": None if size == "-" else int(size),
              "referrer": referrer, "user_agent": agent, "request": request}
    if len(parts) == 3:
        fields |= {"method": parts[0], "path": parts[1], "protocol": parts[2]}
    if user != "-":
        fields["user"] = user
    ts = datetime.strptime(stamp, "%d/%b/%Y:%H:%M:%S %z")
    return Event(source=source, line_no=line_no, offset=0, raw=line, format="access", ts=ts,
                 message=request, fields=fields)


def windows(record: dict, line_no: int = 1, ts: datetime = UTC0, source: str = "security.json") -> Event:
    system, data = record["System"], record.get("EventData", {})
    fields = {"EventID": system["EventID"], "Channel": system["Channel"], "Provider": system["Provider"],
              "Computer": system["Computer"], **data}
    if data.get("IpAddress") not in (None, "-"):
        fields["src_ip"] = data["IpAddress"]
    if "TargetUserName" in data:
        fields["user"] = data["TargetUserName"]
    summary = " ".join(f"{k}={v}" for k, v in data.items())
    return Event(source=source, line_no=line_no, offset=0, raw=json.dumps(record), format="windows", ts=ts,
                 host=system["Computer"], message=f"EventID {system['EventID']} {system['Channel']}: {summary}",
                 fields=fields)


def sysmon1(command_line: str, image: str, line_no: int = 1) -> Event:
    return windows({"System": {"EventID": 1, "Channel": "Microsoft-Windows-Sysmon/Operational",
                               "Provider": "Microsoft-Windows-Sysmon", "Computer": "WS01.corp.local"},
                    "EventData": {"Image": image, "CommandLine": command_line, "User": "CORP\\bob",
                                  "ParentImage": "C:\\Windows\\explorer.exe"}}, line_no, source="sysmon.json")


def ssh_lines(template: str, count: int, start: int = 1, seconds: int = 2, host: str = "LabSZ") -> list[Event]:
    """`count` sshd lines `seconds` apart; `template` gets {i} (a counter) and is the message."""
    events = []
    for i in range(count):
        ts = T0 + timedelta(seconds=seconds * i)
        line = f"{ts:%b %d %H:%M:%S} {host} sshd[{24200 + i}]: {template.format(i=i)}"
        events.append(syslog(line, start + i))
    return events


def by_rule(signals: list[Signal], rule_id: str) -> list[Signal]:
    return [s for s in signals if s.rule_id == rule_id]


def fired(signals: list[Signal]) -> set[str]:
    return {s.rule_id for s in signals}


FAILED = "Failed password for invalid user admin from 173.234.31.186 port {i} ssh2"


def parsed(lines: list[str], fmt: str, source: str = "auth.log") -> list[Event]:
    """The real parser's events for `lines` (these tests check parser and rules together)."""
    from logwarden.app.events import LogLine
    from logwarden.app.parse import parse_lines

    return list(parse_lines([LogLine(source=source, line_no=n, text=t, inode=0, offset=0)
                             for n, t in enumerate(lines, 1)], fmt))


def web(request: str, status: int = 200, agent: str = "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 "
        "Firefox/121.0", ip: str = "203.0.113.50", line_no: int = 1, second: int = 0) -> Event:
    line = (f'{ip} - - [10/Mar/2024:13:55:{second:02d} +0000] "{request}" {status} 512 "-" "{agent}"')
    return access(line, line_no)


def security(event_id: int, data: dict, channel: str = "Security",
             provider: str = "Microsoft-Windows-Security-Auditing", line_no: int = 1, ts: datetime = UTC0) -> Event:
    return windows({"System": {"EventID": event_id, "Channel": channel, "Provider": provider,
                               "Computer": "DC01.corp.local"}, "EventData": data}, line_no, ts)


def failed_logon(i: int, user: str = "administrator", ip: str = "185.220.101.4") -> Event:
    return security(4625, {"TargetUserName": user, "TargetDomainName": "CORP", "Status": "0xc000006d",
                           "SubStatus": "0xc000006a", "LogonType": "3", "IpAddress": ip, "IpPort": "0",
                           "WorkstationName": "-"}, line_no=i, ts=UTC0 + timedelta(seconds=i))


def _trail(name: str, params: dict | None = None, *, user: str = "ci-bot", second: int = 0, error: str | None = None,
           source: str = "ec2.amazonaws.com") -> str:
    record = {"eventVersion": "1.09", "eventTime": f"2025-04-02T10:{second // 60:02d}:{second % 60:02d}Z",
              "eventSource": source, "eventName": name, "awsRegion": "us-east-1", "sourceIPAddress": "34.201.7.9",
              "userAgent": "aws-cli/2.15", "requestParameters": params,
              "userIdentity": {"type": "IAMUser", "arn": f"arn:aws:iam::111122223333:user/{user}", "userName": user}}
    if error:
        record |= {"errorCode": error, "errorMessage": "denied"}
    return json.dumps(record)


def _gcp(method: str, service: str = "cloudresourcemanager.googleapis.com", second: int = 0, **payload) -> str:
    return json.dumps({"insertId": f"x{second}", "logName": "projects/acme-prod/logs/cloudaudit.googleapis.com%2Factivity",
                       "protoPayload": {"@type": "type.googleapis.com/google.cloud.audit.AuditLog",
                                        "authenticationInfo": {"principalEmail": "ci@acme-prod.iam.gserviceaccount.com"},
                                        "requestMetadata": {"callerIp": "34.90.1.2", "callerSuppliedUserAgent": "gcloud"},
                                        "serviceName": service, "methodName": method, "resourceName": "projects/acme-prod",
                                        **payload},
                       "resource": {"type": "project"}, "severity": "NOTICE",
                       "timestamp": f"2025-04-02T10:00:{second:02d}.000Z"})


def _entra(user: str, second: int, code: str = "50126", ip: str = "45.9.20.13") -> str:
    return json.dumps({"time": f"2025-04-02T10:{second // 60:02d}:{second % 60:02d}Z", "operationName": "Sign-in activity",
                       "category": "SignInLogs", "resultType": code, "callerIpAddress": ip,
                       "properties": {"userPrincipalName": user, "appDisplayName": "Azure Portal", "ipAddress": ip,
                                      "status": {"errorCode": int(code), "failureReason": "Invalid username or password."}}})


def _k8s(verb: str, resource: str, *, code: int = 200, user: str = "dev@corp.io", subresource: str | None = None,
         name: str = "x", second: int = 0, body: dict | None = None, uri: str = "/api/v1/x") -> str:
    ref = {"resource": resource, "namespace": "prod", "name": name} | ({"subresource": subresource} if subresource else {})
    return json.dumps({"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse", "stage": "ResponseComplete",
                       "auditID": f"id{second}", "requestURI": uri, "verb": verb,
                       "user": {"username": user, "groups": ["system:authenticated"]}, "sourceIPs": ["45.9.20.11"],
                       "objectRef": ref, "responseStatus": {"metadata": {}, "code": code}, "requestObject": body,
                       "requestReceivedTimestamp": f"2024-05-02T10:00:{second:02d}.000000Z"})


def mssql_audit(i: int, action: str, statement: str, succeeded: str = "false") -> Event:
    """SQL Server audit event 33205 as evtx_dump writes it: one unnamed <Data> of key:value lines."""
    text = (f"audit_schema_version:1\nevent_time:2020-07-15 19:51:18.27\nsequence_number:1\naction_id:{action}\n"
            f"succeeded:{succeeded}\nserver_principal_name:sa\nserver_instance_name:MSSQL01\\RADAR\n"
            f"statement:{statement}\nadditional_information:<action_info><address>10.23.23.9</address></action_info>\n")
    record = {"Event": {"System": {"Provider": {"#attributes": {"Name": "MSSQL$RADAR"}},
                                   "EventID": {"#attributes": {"Qualifiers": 16384}, "#text": 33205},
                                   "Channel": "Application", "Computer": "mssql01.corp.local",
                                   "TimeCreated": {"#attributes": {"SystemTime": (UTC0 + timedelta(seconds=i)).isoformat()}}},
                        "EventData": {"Data": {"#text": text}, "Binary": None}}}
    [event] = parse_lines([LogLine("application.json", 0, 0, i, json.dumps(record))], "windows")
    return event
