"""The Sigma engine on real-shaped events: every modifier, wildcards, nulls, keywords, conditions,
correlations across scan calls, logsource routing and field mapping for each Windows JSON shape,
packs (folders, zips, cache, profile, `rules update`) and bad input (a broken file, an unknown
modifier, an unknown logsource, a backtracking regex): a clear per-rule report, a bounded match,
and the run goes on."""

from __future__ import annotations

import base64
import json
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from _ingest_helpers import log_lines
from _sigma_helpers import sigmahq_pack_paths
from click.testing import CliRunner

from logwarden.app.detect import Detector, Profile, load_rules, load_ruleset
from logwarden.app.detect.regex import compile_safe
from logwarden.app.events import Event
from logwarden.app.parse import parse_lines, parse_stream
from logwarden.cli.main import main

T0 = datetime(2025, 4, 2, 10, 0, 0, tzinfo=timezone.utc)
WIN = "logsource: {product: windows, category: process_creation}"


def rule(detection: str, *, name: str = "t-rule", logsource: str = WIN, level: str = "high", extra: str = "") -> str:
    body = "\n".join("  " + line for line in detection.strip("\n").splitlines())
    return f"title: {name}\nname: {name}\nlevel: {level}\n{logsource}\n{extra}detection:\n{body}\n"


def pack(tmp_path: Path, *docs: str, name: str = "rules.yml") -> Path:
    path = tmp_path / name
    path.write_text("\n---\n".join(docs))
    return path


def sysmon(data: dict, line_no: int = 1, event_id: int = 1, t: datetime = T0, source: str = "sysmon.json") -> Event:
    record = {"Event": {"System": {"Provider": {"#attributes": {"Name": "Microsoft-Windows-Sysmon"}}, "EventID": event_id,
                                   "Channel": "Microsoft-Windows-Sysmon/Operational", "Computer": "WS1",
                                   "TimeCreated": {"#attributes": {"SystemTime": t.isoformat()}}},
                        "EventData": data}}
    [event] = parse_lines(log_lines([json.dumps(record)], source), "windows")
    event.line_no = line_no
    return event


def fires(path: Path, events: list[Event], rule_id: str = "t-rule", **kw) -> bool:
    return any(s.rule_id == rule_id for s in Detector(load_rules([path], **kw)).scan(events))


CMD = "C:\\Windows\\System32\\cmd.exe"


# --- modifiers, wildcards, values ----------------------------------------------------------------


@pytest.mark.parametrize("detection, command_line, expected", [
    ("selection:\n  CommandLine|contains: 'WHOAMI'", "cmd /c whoami /all", True),  # case-insensitive
    ("selection:\n  CommandLine|contains|cased: 'WHOAMI'", "cmd /c whoami /all", False),
    ("selection:\n  CommandLine|startswith: 'cmd /c'", "cmd /c dir", True),
    ("selection:\n  CommandLine|endswith: '/all'", "cmd /c whoami /all", True),
    ("selection:\n  CommandLine|contains|all: ['whoami', '/all']", "cmd /c whoami /all", True),
    ("selection:\n  CommandLine|contains|all: ['whoami', '/groups']", "cmd /c whoami /all", False),
    ("selection:\n  CommandLine: 'cmd /c who*i /a?l'", "cmd /c whoami /all", True),  # wildcards
    ("selection:\n  CommandLine: 'cmd /c who\\*'", "cmd /c who*", True),  # an escaped wildcard is literal
    ("selection:\n  CommandLine: 'cmd /c who\\*'", "cmd /c whoami", False),
    ("selection:\n  CommandLine|re: 'who[a-z]{3}\\s/ALL'", "cmd /c whoami /all", False),  # regexes are case-sensitive
    ("selection:\n  CommandLine|re|i: 'who[a-z]{3}\\s/ALL'", "cmd /c whoami /all", True),
    ("selection:\n  CommandLine|re|s: 'a.b'", "x a\nb", True),
    ("selection:\n  CommandLine|re|m: '^b$'", "a\nb\nc", True),
    ("selection:\n  CommandLine|re: '^b$'", "a\nb\nc", False),
    ("selection:\n  CommandLine|windash|contains: ' -enc '", "powershell /enc AAAA", True),
    ("selection:\n  CommandLine|windash|contains: ' -enc '", "powershell \u2013enc AAAA", True),  # en dash
    ("selection:\n  CommandLine|windash|contains: ' -enc '", "powershell enc AAAA", False),
    ("selection:\n  CommandLine|base64offset|contains: 'http://'",
     "powershell -e " + base64.b64encode(b"IEX(New-Object Net.WebClient).DownloadString('http://x/a')").decode(), True),
    ("selection:\n  CommandLine|wide|base64offset|contains: 'whoami'",
     "powershell -enc " + base64.b64encode("whoami /priv".encode("utf-16-le")).decode(), True),
    ("selection:\n  CommandLine|base64|contains: 'whoami'", "echo " + base64.b64encode(b"whoami").decode(), True),
    ("selection:\n  CommandLine|utf16le|base64|contains: 'ls'", "x " + base64.b64encode("ls".encode("utf-16-le")).decode(), True),
    ("selection:\n  CommandLine|utf16be|base64|contains: 'ls'", "x " + base64.b64encode("ls".encode("utf-16-be")).decode(), True),
])
def test_string_modifiers(tmp_path, detection, command_line, expected):
    path = pack(tmp_path, rule(detection + "\ncondition: selection"))
    assert fires(path, [sysmon({"Image": CMD, "CommandLine": command_line})]) is expected


@pytest.mark.parametrize("detection, data, expected", [
    ("selection:\n  DestinationIp|cidr: '10.0.0.0/8'", {"DestinationIp": "10.1.2.3"}, True),
    ("selection:\n  DestinationIp|cidr: ['192.168.0.0/16', '10.0.0.0/8']", {"DestinationIp": "172.16.0.1"}, False),
    ("selection:\n  DestinationIp|cidr: '10.0.0.0/8'", {"DestinationIp": "::ffff:10.9.9.9"}, True),  # IPv4-mapped
    ("selection:\n  DestinationIp|cidr: 'fe80::/10'", {"DestinationIp": "fe80::1"}, True),
    ("selection:\n  DestinationPort|gt: 1024", {"DestinationPort": 4444}, True),
    ("selection:\n  DestinationPort|lte: 1024", {"DestinationPort": "4444"}, False),
    ("selection:\n  DestinationPort|gte: 443", {"DestinationPort": 443}, True),
    ("selection:\n  DestinationPort|lt: 10", {"DestinationPort": "n/a"}, False),  # not a number: no match
    ("selection:\n  DestinationPort: 443", {"DestinationPort": "443"}, True),  # numbers compare as numbers
    ("selection:\n  Initiated: true", {"Initiated": "true"}, True),
    ("selection:\n  SourceHostname|exists: true", {"SourceHostname": "WS1"}, True),
    ("selection:\n  SourceHostname|exists: false", {"DestinationIp": "1.1.1.1"}, True),
    ("selection:\n  SourceHostname: null", {"DestinationIp": "1.1.1.1"}, True),
    ("selection:\n  SourceHostname: null", {"SourceHostname": "WS1"}, False),
    ("selection:\n  SourceHostname: null", {"SourceHostname": ""}, False),  # empty is '', not null
    ("selection:\n  SourceHostname: ''", {"SourceHostname": ""}, True),
    ("selection:\n  SourceHostname|fieldref: DestinationHostname", {"SourceHostname": "a", "DestinationHostname": "A"}, True),
    ("selection:\n  SourceHostname|fieldref: DestinationHostname", {"SourceHostname": "a", "DestinationHostname": "b"}, False),
    ("selection:\n  SourceHostname|fieldref|startswith: DestinationHostname",
     {"SourceHostname": "ws1.corp", "DestinationHostname": "ws1"}, True),
])
def test_value_modifiers(tmp_path, detection, data, expected):
    path = pack(tmp_path, rule(detection + "\ncondition: selection",
                               logsource="logsource: {product: windows, category: network_connection}"))
    assert fires(path, [sysmon(data, event_id=3)]) is expected


def test_keywords_search_the_whole_event(tmp_path):
    path = pack(tmp_path, rule("keywords:\n  - 'sekurlsa::'\n  - 'gentilkiwi'\ncondition: keywords",
                               logsource="logsource: {product: windows}"))
    assert fires(path, [sysmon({"Image": CMD, "CommandLine": "m.exe SEKURLSA::logonpasswords"})])
    assert not fires(path, [sysmon({"Image": CMD, "CommandLine": "dir"})])
    syslog = pack(tmp_path, rule("keywords: ['Accepted password for root']\ncondition: keywords",
                                 logsource="logsource: {product: linux, service: sshd}"), name="l.yml")
    line = "Mar 10 07:30:00 web1 sshd[811]: Accepted password for root from 10.1.2.3 port 51000 ssh2"
    assert fires(syslog, list(parse_lines(log_lines([line]), "syslog")))

    # the screen reads the raw line in any case; a non-ASCII line is lowered as the rule lowers it
    assert fires(path, [sysmon({"Image": CMD, "CommandLine": "Ünïcode.exe GentilKiwi"})])


def test_defender_names_with_spaces_are_read_under_sigmas_names_too(tmp_path):
    """Defender's EventData says "Threat Name"; SigmaHQ's rules say ThreatName (and some rules the
    name as logged). Both fire, also when another rule of the logsource reads the spaced name."""
    defender = "logsource: {product: windows, service: windefend}"
    path = pack(tmp_path, rule("selection:\n  ThreatName|contains: Mimikatz\ncondition: selection", logsource=defender),
                rule("selection:\n  Threat Name|contains: EICAR\ncondition: selection", name="spaced",
                     logsource=defender))
    record = {"Event": {"System": {"Provider": {"#attributes": {"Name": "Microsoft-Windows-Windows Defender"}},
                                   "EventID": 1116, "Channel": "Microsoft-Windows-Windows Defender/Operational",
                                   "Computer": "WS1", "TimeCreated": {"#attributes": {"SystemTime": T0.isoformat()}}},
                        "EventData": {"Threat Name": "HackTool:Win32/Mimikatz.D", "Severity": "5"}}}
    [event] = parse_lines(log_lines([json.dumps(record)], "defender.json"), "windows")
    assert fires(path, [event])
    record["Event"]["EventData"]["Threat Name"] = "Virus:DOS/EICAR_Test_File"
    [eicar] = parse_lines(log_lines([json.dumps(record)], "defender.json"), "windows")
    assert fires(path, [eicar], rule_id="spaced") and not fires(path, [eicar])


def test_a_route_keeps_its_hash_across_pickling():
    """A route hashes once (the detector looks one up per event); a string's hash differs between
    processes, so an unpickled route computes its own."""
    import pickle

    from logwarden.app.detect.logsource import route_of

    route = route_of(sysmon({"Image": CMD}))
    again = pickle.loads(pickle.dumps(route))
    assert again == route and hash(again) == hash(route) and {route: 1}[again] == 1


@pytest.mark.parametrize("condition, expected", [
    ("sel_a and sel_b", False), ("sel_a or sel_b", True), ("sel_a and not sel_b", True),
    ("not (sel_a or sel_b)", False), ("1 of sel_*", True), ("all of sel_*", False), ("1 of them", True),
    ("all of them", False), ("(sel_a or sel_c) and not sel_b", True), ("sel_a and (sel_b or sel_c)", True),
])
def test_conditions(tmp_path, condition, expected):
    detection = ("sel_a:\n  CommandLine|contains: whoami\nsel_b:\n  CommandLine|contains: mimikatz\n"
                 f"sel_c:\n  Image|endswith: '\\cmd.exe'\ncondition: {condition}")
    assert fires(pack(tmp_path, rule(detection)), [sysmon({"Image": CMD, "CommandLine": "cmd /c whoami"})]) is expected


def test_lists_of_maps_are_alternatives_and_lists_of_values_any_of(tmp_path):
    detection = ("selection:\n  - Image|endswith: '\\rundll32.exe'\n    CommandLine|contains: javascript\n"
                 "  - CommandLine|contains: [mshta, regsvr32]\ncondition: selection")
    path = pack(tmp_path, rule(detection))
    assert fires(path, [sysmon({"Image": CMD, "CommandLine": "regsvr32 /s x"})])
    assert not fires(path, [sysmon({"Image": CMD, "CommandLine": "javascript:x"})])


def test_expand_placeholders_come_from_the_placeholder_file(tmp_path):
    text = rule("selection:\n  User|expand: '%admins%'\ncondition: selection")
    path = pack(tmp_path, text)
    [entry] = load_rules([path]).report
    assert entry["state"] == "error" and "%admins%" in entry["reason"] and "LOGWARDEN_SIGMA_PLACEHOLDERS" in entry["reason"]
    loaded = load_ruleset([path], placeholders={"admins": ["CORP\\alice", "CORP\\bob"]})
    assert [e["state"] for e in loaded.report] == ["loaded"]
    assert {s.rule_id for s in Detector(loaded).scan([sysmon({"Image": CMD, "User": "corp\\BOB"})])} == {"t-rule"}


# --- routing and field mapping ------------------------------------------------------------------


SHAPES = {
    "evtx_dump": {"Event": {"System": {"EventID": 1, "Channel": "Microsoft-Windows-Sysmon/Operational",
                                       "Provider": {"#attributes": {"Name": "Microsoft-Windows-Sysmon"}}},
                            "EventData": {"Image": CMD, "CommandLine": "cmd /c whoami /priv"}}},
    "flat EventData": {"EventID": 1, "Channel": "Microsoft-Windows-Sysmon/Operational",
                       "EventData": {"Image": CMD, "CommandLine": "cmd /c whoami /priv"}},
    "Winlogbeat/ECS": {"@timestamp": "2025-04-02T10:00:00Z", "winlog": {
        "event_id": "1", "channel": "Microsoft-Windows-Sysmon/Operational", "provider_name": "Microsoft-Windows-Sysmon",
        "event_data": {"Image": CMD, "CommandLine": "cmd /c whoami /priv"}}},
    "OTRF flat": {"EventID": 1, "Channel": "Microsoft-Windows-Sysmon/Operational", "SourceName": "Microsoft-Windows-Sysmon",
                  "Image": CMD, "CommandLine": "cmd /c whoami /priv", "Hostname": "WS1"},
    "Security 4688": {"EventID": 4688, "Channel": "Security", "Provider": "Microsoft-Windows-Security-Auditing",
                      "NewProcessName": CMD, "CommandLine": "cmd /c whoami /priv",
                      "ParentProcessName": "C:\\Windows\\explorer.exe"},
}


@pytest.mark.parametrize("shape", SHAPES)
def test_process_creation_rules_see_every_windows_json_shape(tmp_path, shape):
    path = pack(tmp_path, rule("selection:\n  Image|endswith: '\\cmd.exe'\n  CommandLine|contains: whoami\n"
                               "condition: selection"))
    events = list(parse_lines(log_lines([json.dumps(SHAPES[shape])]), "windows"))
    assert fires(path, events)


def test_security_4688_maps_parent_image_and_only_process_creation_rules_see_it(tmp_path):
    parent = rule("selection:\n  ParentImage|endswith: '\\explorer.exe'\ncondition: selection", name="parent")
    other = rule("selection:\n  CommandLine|contains: whoami\ncondition: selection", name="dns",
                 logsource="logsource: {product: windows, category: dns_query}")
    events = list(parse_lines(log_lines([json.dumps(SHAPES["Security 4688"])]), "windows"))
    fired = {s.rule_id for s in Detector(load_rules([pack(tmp_path, parent, other)])).scan(events)}
    assert fired == {"parent"}


def test_web_rules_read_access_logs_through_sigma_field_names(tmp_path):
    detection = ("selection:\n  cs-method: GET\n  cs-uri-query|contains: '/etc/passwd'\n  sc-status: 200\n"
                 "  cs-uri-stem|endswith: '.php'\n  c-useragent|contains: curl\ncondition: selection")
    path = pack(tmp_path, rule(detection, logsource="logsource: {category: webserver}"))
    line = '203.0.113.9 - - [02/Apr/2025:10:00:00 +0000] "GET /view.php?f=../../etc/passwd HTTP/1.1" 200 12 "-" "curl/8"'
    assert fires(path, list(parse_lines(log_lines([line]), "access")))
    assert not fires(path, list(parse_lines(log_lines([line.replace(" 200 ", " 404 ")]), "access")))


def test_cloud_rules_read_nested_fields_of_the_original_record(tmp_path):
    detection = "selection:\n  eventName: StopLogging\n  userIdentity.sessionContext.sessionIssuer.type: Role\ncondition: selection"
    path = pack(tmp_path, rule(detection, logsource="logsource: {product: aws, service: cloudtrail}"))
    record = {"eventTime": "2025-04-02T10:00:00Z", "eventSource": "cloudtrail.amazonaws.com", "eventName": "StopLogging",
              "userIdentity": {"type": "AssumedRole", "sessionContext": {"sessionIssuer": {"type": "Role"}}}}
    assert fires(path, list(parse_lines(log_lines([json.dumps(record)]), "cloudtrail")))


def test_a_pretty_printed_json_document_is_read_as_events(tmp_path):
    """SigmaHQ's regression samples: one evtx_dump document over many lines (or an array of them)."""
    path = pack(tmp_path, rule("selection:\n  CommandLine|contains: whoami\ncondition: selection"))
    single = json.dumps(SHAPES["evtx_dump"], indent=2).splitlines()
    array = json.dumps([SHAPES["evtx_dump"], SHAPES["evtx_dump"]], indent=2).splitlines()
    for text in (single, array):
        decision, events = parse_stream(log_lines(text), path="sample.json")
        events = list(events)
        assert decision.name == "windows" and len(events) == (1 if text is single else 2)
        assert fires(path, events)


# --- remembered answers: the dispatch's memos never change an answer ----------------------------------


def test_a_remembered_answer_tells_a_boolean_from_the_number_one(tmp_path):
    """`Flag: true` holds for JSON true, not for 1; the two are equal as dictionary keys (1 == True),
    so an answer remembered for one must not be reused for the other."""
    path = pack(tmp_path, rule("selection:\n  Image|endswith: '\\x.exe'\n  Flag: true\ncondition: selection"))
    events = [sysmon({"Image": "C:\\x.exe", "Flag": flag}, line_no=i) for i, flag in enumerate([1, True, 1, True], 1)]
    [signal] = [s for s in Detector(load_rules([path])).scan(events) if s.rule_id == "t-rule"]
    assert signal.line_numbers == [2, 4]


def test_repeated_values_give_the_answers_of_fresh_ones(tmp_path):
    """The same images and command lines over and over (answers remembered by value), mixed with
    values never seen (memos that switch themselves off): every event is judged as if alone."""
    path = pack(tmp_path, rule("selection:\n  Image|endswith: '\\whoami.exe'\n  CommandLine|contains: '/all'\n"
                               "filter:\n  ParentImage|endswith: '\\explorer.exe'\ncondition: selection and not filter"))
    events, expected = [], []
    for i in range(1, 3001):
        parent = "C:\\Windows\\explorer.exe" if i % 3 == 0 else f"C:\\tools\\p{i % 7 if i % 2 else i}.exe"
        command = "whoami /all" if i % 5 else f"whoami /groups {i}"
        events.append(sysmon({"Image": "C:\\Windows\\System32\\whoami.exe", "CommandLine": command,
                              "ParentImage": parent}, line_no=i))
        if i % 3 and i % 5:
            expected.append(i)
    detector = Detector(load_rules([path]))
    [signal] = [s for s in detector.scan(events) if s.rule_id == "t-rule"]
    assert signal.line_numbers == expected[:250] + expected[-250:]  # line numbers are capped at 500
    assert signal.description.startswith(f"{len(expected)} matching lines")


def test_a_memo_whose_keys_never_repeat_switches_itself_off():
    from logwarden.app.detect.dispatch import _Memo

    fresh, repeating = _Memo(), _Memo()
    for i in range(5000):
        for memo, key in ((fresh, i), (repeating, i % 10)):
            memo.lookups += 1
            if key not in memo.known:
                memo.store(key, True)
    assert fresh.table is None and fresh.known == {}
    assert repeating.table == {i: True for i in range(10)}


# --- correlations ---------------------------------------------------------------------------------


def failed_logon(i: int, user: str = "admin", ip: str = "185.220.101.4", t: datetime = T0) -> Event:
    record = {"EventID": 4625, "Channel": "Security", "Computer": "DC1", "TimeCreated": t.isoformat(),
              "TargetUserName": user, "IpAddress": ip, "LogonType": "3"}
    [event] = parse_lines(log_lines([json.dumps(record)], "security.json"), "windows")
    event.line_no = i
    return event


BASE = ("title: failed logon\nname: failed\nlevel: low\nlogsource: {product: windows, service: security}\n"
        "detection:\n  selection:\n    EventID: 4625\n  condition: selection\n")


def correlation(body: str, name: str = "corr") -> str:
    return f"title: {name}\nname: {name}\nlevel: high\ntags: [attack.credential_access, attack.t1110]\ncorrelation:\n{body}"


def test_event_count_spans_scan_calls_and_makes_one_signal_over_all_its_events(tmp_path):
    path = pack(tmp_path, BASE, correlation("  type: event_count\n  rules: [failed]\n  group-by: [IpAddress]\n"
                                            "  timespan: 5m\n  condition: {gte: 5}\n"))
    detector = Detector(load_rules([path]))
    events = [failed_logon(i, t=T0 + timedelta(seconds=i)) for i in range(1, 9)]
    assert detector.scan(events[:3]) == []  # the base rule feeds the correlation only (generate: false)
    [signal] = detector.scan(events[3:6])
    assert (signal.rule_id, signal.level, signal.category, signal.key) == ("corr", "high", "brute_force", "185.220.101.4")
    assert signal.line_numbers == [1, 2, 3, 4, 5, 6] and signal.techniques == ["T1110"]
    assert [s.line_numbers for s in detector.scan(events[6:])] == [[7, 8]]  # the burst goes on


def test_event_count_outside_the_timespan_or_another_group_does_not_fire(tmp_path):
    path = pack(tmp_path, BASE, correlation("  type: event_count\n  rules: [failed]\n  group-by: [IpAddress]\n"
                                            "  timespan: 1m\n  condition: {gte: 3}\n"))
    slow = [failed_logon(i, t=T0 + timedelta(minutes=i)) for i in range(1, 6)]
    spread = [failed_logon(i, ip=f"10.0.0.{i}", t=T0) for i in range(1, 6)]
    assert Detector(load_rules([path])).scan(slow) == [] and Detector(load_rules([path])).scan(spread) == []


def test_value_count_counts_distinct_values(tmp_path):
    path = pack(tmp_path, BASE, correlation("  type: value_count\n  rules: [failed]\n  group-by: [IpAddress]\n"
                                            "  timespan: 10m\n  condition: {gte: 4, field: TargetUserName}\n"))
    spray = [failed_logon(i, user=f"user{i}") for i in range(1, 5)]
    one_user = [failed_logon(i) for i in range(1, 10)]
    [signal] = Detector(load_rules([path])).scan(spray)
    assert "4 distinct TargetUserName" in signal.description
    assert Detector(load_rules([path])).scan(one_user) == []


SUCCESS = ("title: logon\nname: logon\nlevel: low\nlogsource: {product: windows, service: security}\n"
           "detection:\n  selection:\n    EventID: 4624\n  condition: selection\n")


def logon(i: int, ip: str = "185.220.101.4") -> Event:
    [event] = parse_lines(log_lines([json.dumps({"EventID": 4624, "Channel": "Security", "TimeCreated": T0.isoformat(),
                                                  "TargetUserName": "admin", "IpAddress": ip})], "security.json"), "windows")
    event.line_no = i
    return event


@pytest.mark.parametrize("kind, order, expected", [
    ("temporal_ordered", ["failed", "logon"], True), ("temporal_ordered", ["logon", "failed"], False),
    ("temporal", ["logon", "failed"], True)])
def test_temporal_correlations(tmp_path, kind, order, expected):
    path = pack(tmp_path, BASE, SUCCESS, correlation(f"  type: {kind}\n  rules: [failed, logon]\n"
                                                     "  group-by: [IpAddress]\n  timespan: 10m\n"))
    events = [failed_logon(1) if n == "failed" else logon(1) for n in order]
    for i, e in enumerate(events, 1):
        e.line_no = i
    signals = Detector(load_rules([path])).scan(events)
    assert bool(signals) is expected
    if expected:
        assert signals[0].line_numbers == [1, 2]


def test_chained_correlation_with_aliases(tmp_path):
    """Five failures (event_count) then a logon from the same address, the address named differently."""
    logon_by_source = SUCCESS.replace("name: logon", "name: logon")
    path = pack(tmp_path, BASE, logon_by_source,
                correlation("  type: event_count\n  rules: [failed]\n  group-by: [IpAddress]\n  timespan: 10m\n"
                            "  condition: {gte: 5}\n", name="many"),
                correlation("  type: temporal_ordered\n  rules: [many, logon]\n  group-by: [client]\n  timespan: 10m\n"
                            "  aliases:\n    client: {many: IpAddress, logon: IpAddress}\n", name="then"))
    events = [failed_logon(i) for i in range(1, 6)] + [logon(6)]
    fired = {s.rule_id: s.line_numbers for s in Detector(load_rules([path])).scan(events)}
    assert fired == {"then": [1, 2, 3, 4, 5, 6]}  # `many` feeds `then` only (generate: false)


def test_correlation_state_is_bounded(tmp_path):
    path = pack(tmp_path, BASE, correlation("  type: event_count\n  rules: [failed]\n  group-by: [IpAddress]\n"
                                            "  timespan: 1h\n  condition: {gte: 50}\n"))
    detector = Detector(load_rules([path]), max_keys_per_rule=100)
    detector.scan([failed_logon(i, ip=f"10.{i // 250}.0.{i % 250}") for i in range(5000)])
    assert max(len(states) for states in detector._states.values()) <= 100


def test_a_correlation_over_a_rule_that_did_not_load_is_reported(tmp_path):
    path = pack(tmp_path, correlation("  type: event_count\n  rules: [nowhere]\n  timespan: 1m\n  condition: {gte: 2}\n"))
    [entry] = load_rules([path]).report
    assert entry["state"] == "error" and "nowhere" in entry["reason"]


# --- signals ------------------------------------------------------------------------------------------


def test_signals_carry_level_techniques_category_references_and_false_positives(tmp_path):
    extra = ("tags: [attack.credential_access, attack.t1003.001]\nreferences: [https://example.org/lsass]\n"
             "falsepositives: [Backup software]\n")
    path = pack(tmp_path, rule("selection:\n  CommandLine|contains: lsass\ncondition: selection", level="critical",
                               extra=extra))
    [signal] = Detector(load_rules([path])).scan([sysmon({"Image": CMD, "CommandLine": "procdump -ma lsass.exe"})])
    assert (signal.level, signal.category, signal.techniques) == ("critical", "privilege_escalation", ["T1003.001"])
    assert signal.references == ["https://example.org/lsass"] and signal.falsepositives == ["Backup software"]
    assert signal.key == "WS1"  # no source address: the host


# --- packs: zips, cache, profile, update ---------------------------------------------------------------


def test_a_zip_pack_loads_and_the_cache_is_used_until_a_file_changes(tmp_path):
    zipped = tmp_path / "pack.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("windows/a.yml", rule("selection:\n  CommandLine|contains: whoami\ncondition: selection"))
    cache = tmp_path / "cache"
    cold = load_ruleset([zipped], cache_dir=cache)
    warm = load_ruleset([zipped], cache_dir=cache)
    assert (cold.packs[0].cached, warm.packs[0].cached) == (False, True)
    assert [r.id for r in warm] == ["t-rule"] and "pack.zip!windows/a.yml" in warm.rules[0].ir.source
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("windows/a.yml", rule("selection:\n  CommandLine|contains: whoami\ncondition: selection",
                                               name="changed"))
    changed = load_ruleset([zipped], cache_dir=cache)
    assert not changed.packs[0].cached and [r.id for r in changed] == ["changed"]


def test_profile_filters_by_level_status_and_mute_list_with_reasons(tmp_path):
    docs = [rule("selection:\n  CommandLine|contains: a\ncondition: selection", name=n, level=lv, extra=f"status: {st}\n")
            for n, lv, st in [("info", "informational", "stable"), ("old", "high", "deprecated"),
                              ("new", "high", "experimental"), ("loud", "medium", "stable"), ("good", "high", "test")]]
    path = pack(tmp_path, *docs)
    report = {e["id"]: (e["state"], e["reason"]) for e in load_rules([path], profile=Profile(
        statuses=frozenset(("stable", "test")), mute=frozenset(("loud",)))).report}
    assert report["good"] == ("loaded", None)
    assert report["info"][0] == report["old"][0] == report["new"][0] == report["loud"][0] == "filtered"
    assert "minimum" in report["info"][1] and "deprecated" in report["old"][1] and "muted" in report["loud"][1]


def test_rules_update_installs_a_pack_that_later_runs_load(tmp_path, monkeypatch):
    monkeypatch.setenv("LOGWARDEN_HOME", str(tmp_path / "home"))
    from logwarden.app import config

    config.get_settings.cache_clear()
    source = tmp_path / "mine"
    source.mkdir()
    (source / "r.yml").write_text(rule("selection:\n  CommandLine|contains: whoami\ncondition: selection", name="mine-1"))
    result = CliRunner().invoke(main, ["rules", "update", "--from", str(source), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["loaded"] == 1 and (tmp_path / "home" / "sigma" / "mine" / "r.yml").is_file()
    listed = json.loads(CliRunner().invoke(main, ["rules", "--search", "mine-1", "--json"]).output)
    assert [r["id"] for r in listed["rules"]] == ["mine-1"] and {p["name"] for p in listed["packs"]} >= {"logwarden", "mine"}
    unreachable = CliRunner().invoke(main, ["rules", "update", "--from", "http://127.0.0.1:9/sigma.zip"])
    assert unreachable.exit_code == 2 and "cannot download" in unreachable.output
    config.get_settings.cache_clear()


def test_rules_update_from_the_sigmahq_copy_loads_almost_all_of_it(tmp_path, monkeypatch):
    """The shared SigmaHQ copy as `rules update --from` installs it: ≥ 97% of its rules load."""
    monkeypatch.setenv("LOGWARDEN_HOME", str(tmp_path / "home"))
    from logwarden.app import config

    config.get_settings.cache_clear()
    rules_dir = sigmahq_pack_paths()[0]
    result = CliRunner().invoke(main, ["rules", "update", "--from", str(rules_dir), "--name", "sigmahq", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["loaded"] / report["rules"] >= 0.97
    config.get_settings.cache_clear()


# --- bad input ------------------------------------------------------------------------------------------


def test_bad_files_unknown_modifiers_and_unknown_logsources_are_reported_and_the_rest_runs(tmp_path):
    (tmp_path / "broken.yml").write_text("title: x\ndetection: [unclosed\n")
    (tmp_path / "modifier.yml").write_text(rule("selection:\n  CommandLine|sounds_like: whoami\ncondition: selection",
                                                name="bad-modifier"))
    (tmp_path / "nowhere.yml").write_text(rule("selection:\n  CommandLine|contains: whoami\ncondition: selection",
                                               name="mainframe", logsource="logsource: {product: zos}"))
    (tmp_path / "ok.yml").write_text(rule("selection:\n  CommandLine|contains: whoami\ncondition: selection", name="ok"))
    loaded = load_rules([tmp_path])
    report = {e["id"]: e for e in loaded.report}
    assert report["broken.yml"]["state"] == "error" and "not valid YAML" in report["broken.yml"]["reason"]
    assert report["bad-modifier"]["state"] == "error" and "sounds_like" in report["bad-modifier"]["reason"]
    assert report["mainframe"]["state"] == "idle" and "product 'zos'" in report["mainframe"]["reason"]
    fired = {s.rule_id for s in Detector(loaded).scan([sysmon({"Image": CMD, "CommandLine": "whoami"})])}
    assert fired == {"ok"}


def test_a_backtracking_regex_runs_on_a_linear_engine(tmp_path):
    regex = compile_safe("(a+)+$")  # exponential on a backtracking engine against "aaa…ab"
    assert regex.engine == "re2" and regex.timeouts == 0
    assert regex.search("a" * 100_000 + "b") is False and regex.search("b" + "a" * 100_000) is True
    path = pack(tmp_path, rule("selection:\n  CommandLine|re: '(a+)+$'\ncondition: selection"))
    assert not fires(path, [sysmon({"Image": CMD, "CommandLine": "a" * 100_000 + "b"})])


def test_a_regex_re2_refuses_is_time_bounded_and_the_run_goes_on(tmp_path):
    """A look-ahead forces the backtracking engine: the catastrophic search is cut off and counts as
    no match; the rule next to it still fires on the same event."""
    evil = rule("selection:\n  CommandLine|re: '^(?=(a|aa)+$)(a|aa)+c'\ncondition: selection", name="evil")
    good = rule("selection:\n  CommandLine|contains: aaaa\ncondition: selection", name="good")
    loaded = load_rules([pack(tmp_path, evil, good)])
    event = sysmon({"Image": CMD, "CommandLine": "a" * 5000 + "b"})
    assert {s.rule_id for s in Detector(loaded).scan([event])} == {"good"}
    regex = compile_safe("^(?=(a|aa)+$)(a|aa)+c")
    assert regex.engine == "regex" and regex.search("a" * 5000 + "b") is False and regex.timeouts == 1


# --- Entra ID audit logs: SigmaHQ's `properties.message` in every export shape -------------------

APP_CREDENTIAL = "Update application – Certificates and secrets management"


@pytest.mark.parametrize("row", [
    # Log Analytics' AuditLogs table (which pads this activity name with a trailing space)
    {"TimeGenerated": "2021-08-02T13:29:25.983Z", "OperationName": APP_CREDENTIAL + " ", "Category": "ApplicationManagement",
     "ActivityDisplayName": APP_CREDENTIAL + " ", "Result": "success", "Type": "AuditLogs"},
    # diagnostic settings' export (storage account / Event Hub)
    {"time": "2021-08-02T13:29:25.983Z", "operationName": APP_CREDENTIAL, "category": "AuditLogs",
     "resultType": "success", "properties": {"activityDisplayName": APP_CREDENTIAL, "result": "success"}},
])
def test_entra_audit_rules_read_the_activity_name_as_properties_message(tmp_path, row):
    path = pack(tmp_path, rule(f"selection:\n  properties.message:\n    - {APP_CREDENTIAL}\ncondition: selection",
                               logsource="logsource: {product: azure, service: auditlogs}"))
    events = list(parse_lines(log_lines([json.dumps(row)], "audit.json"), "json"))
    assert fires(path, events)
    other = {**row, "OperationName": "Update user", "ActivityDisplayName": "Update user", "operationName": "Update user",
             "properties": {"activityDisplayName": "Update user"}}
    assert not fires(path, list(parse_lines(log_lines([json.dumps(other)], "audit.json"), "json")))
