"""The digest: templates with ids, rule hits with titles, structured events by their salient
fields, rare lines that every prompt split together shows, a lean one-line form, and parts whose
evidence ids stand for exactly the lines they show."""

import json
from datetime import datetime, timedelta

import pytest

from logwarden.app.digest import DigestPart, build_digest, line_text, value_shape
from logwarden.app.events import Event, LogLine, Signal
from logwarden.app.mine import SourceMiner, Window, windows
from logwarden.app.parse import parse_stream
from logwarden.app.triage import prepare

T0 = datetime(2026, 3, 1, 10, 0, 0)
count = lambda s: len(s) // 4  # noqa: E731  a stand-in tokenizer: budgets hold, numbers are arbitrary


def sshd(i: int, message: str) -> Event:
    ts = T0 + timedelta(seconds=i)
    raw = f"{ts:%b %d %H:%M:%S} web01 sshd[{1000 + i}]: {message}"
    return Event(source="auth.log", line_no=i + 1, offset=i * 80, raw=raw, format="syslog", ts=ts,
                 host="web01", program="sshd", message=message,
                 fields={"src_ip": message.split(" from ")[-1].split()[0]} if " from " in message else {})


def digest_of(events, signals=()):
    miner = SourceMiner()
    window = next(windows(events, miner, source="auth.log", inode=1, fmt="syslog"))
    return window, build_digest(window, miner.templates(window.cluster_ids), list(signals))


def parsed(lines: list[str], path: str):
    log_lines = [LogLine(source=path, inode=0, offset=0, line_no=i, text=t) for i, t in enumerate(lines, 1)]
    decision, events = parse_stream(log_lines, path=path)
    miner = SourceMiner()
    window = next(windows(events, miner, source=path, inode=0, fmt=decision.name))
    return window, miner


def test_digest_compresses_with_template_ids_and_rule_titles():
    events = [sshd(i, f"Failed password for invalid user u{i} from 203.0.113.7 port {5000 + i} ssh2") for i in range(300)]
    events.append(sshd(300, "Accepted password for root from 203.0.113.7 port 6000 ssh2"))
    signal = Signal(rule_id="lw-ssh-success-after-failures", title="login after failures", level="high",
                    category="brute_force", techniques=["T1110.001"], source="auth.log", line_numbers=[1, 301],
                    key="203.0.113.7")
    window, digest = digest_of(events, [signal])
    [part] = digest.parts(700, count)
    assert " T1 300x sshd: Failed password for invalid user <USER> from <IP> port <NUM> ssh2" in part.text
    assert "top src_ip (1 distinct): 203.0.113.7 x301" in part.text
    assert "L301: " in part.text and "Accepted password for root" in part.text  # rare: a template seen once
    # a rule's lines are a summary row: its title, level, category, techniques, how many lines where, its keys
    assert "rules fired: login after failures [high, brute_force, T1110.001] ×2 on L1–L301 — 203.0.113.7" in part.text
    assert len(part.text) * 10 < window.raw_chars
    assert part.lines_of["T1"] == list(range(1, 301)) and part.lines_of["L301"] == [301]


def test_every_part_fits_and_together_they_show_every_rare_line():
    # 60 messages seen once each (Drain clusters by token count first: 60 lengths, 60 templates) among a flood
    events = [sshd(i, "Accepted publickey for deploy from 10.0.0.5 port 4000 ssh2") for i in range(200)]
    events += [sshd(200 + i, " ".join(["ok"] * (i + 12))) for i in range(60)]
    _, digest = digest_of(events)
    assert len(digest.rare) == 60
    parts = digest.parts(300, count)
    assert len(parts) > 1 and [p.index for p in parts] == list(range(1, len(parts) + 1))
    assert {n for p in parts for n in p.shown_lines} >= set(digest.rare)  # 100% coverage
    for part in parts:
        assert count(part.text) <= 300 or len(part.shown_lines) == 1
        shown_ids = {ref for ref in part.refs}
        for ref in shown_ids:  # every id the grammar will admit is in the text, with its lines
            assert (f" {ref} " in part.text) or (f" {ref}:" in part.text) or (f" {ref} (" in part.text)
        assert set(part.lines_of) == shown_ids
        assert all(part.lines_of[f"L{n}"] == [n] for n in part.shown_lines)
    capped = digest.parts(300, count, max_parts=2)
    assert len(capped) == 2 and {n for p in capped for n in p.shown_lines} < set(digest.rare)


def test_windows_events_show_salient_fields_not_the_json_head():
    event = {"Event": {"System": {"Provider": {"#attributes": {"Name": "Microsoft-Windows-Sysmon"}}, "EventID": 1,
                                  "EventRecordID": 912345, "TimeCreated": {"#attributes": {"SystemTime": "2026-03-01T10:00:00Z"}},
                                  "Channel": "Microsoft-Windows-Sysmon/Operational", "Computer": "WKS-0142"},
                       "EventData": {"RuleName": "-", "UtcTime": "2026-03-01 10:00:00.123",
                                     "ProcessGuid": "{a1b2c3d4-0000-0000-0000-000000000001}", "ProcessId": 4242,
                                     "Image": "C:\\Users\\bob\\AppData\\Local\\Temp\\plink.exe",
                                     "CommandLine": "plink.exe -R 3389:127.0.0.1:3389 -pw hunter2 root@5.61.3.2",
                                     "ParentImage": "C:\\Windows\\System32\\cmd.exe", "User": "CORP\\bob"}}}
    window, _ = parsed([json.dumps(event)], "sysmon.json")
    text = line_text(window.events[0], window.format)
    assert text.startswith("EventID=1 ")
    assert text.index("Image=") < text.index("CommandLine=") < text.index("ParentImage=")
    assert "plink.exe -R 3389:127.0.0.1:3389" in text
    assert "ProcessGuid" not in text and "UtcTime" not in text and "EventRecordID" not in text


def test_one_access_line_gets_a_lean_digest():
    line = ('203.0.113.9 - - [02/Mar/2026:10:00:00 +0000] "GET /item.php?id=1%20UNION%20SELECT%20user,password'
            '%20FROM%20users-- HTTP/1.1" 200 512 "-" "sqlmap/1.7"')
    triage = prepare(line, count_tokens=count)
    [part] = triage.parts
    assert "templates" not in part.text and "top " not in part.text
    assert part.refs == ["L1"] and part.lines_of == {"L1": [1]}
    assert 'L1: 203.0.113.9 GET /item.php?id=1%20UNION' in part.text and 'ua="sqlmap/1.7"' in part.text
    assert "SQL injection attempt [high, web_attack, T1190] ×1 on L1–L1" in part.text
    # one line: no span line, and the model reads a name for the snippet, not its hash
    assert part.text.splitlines()[0] == "source: pasted lines (access)" and "time " not in part.text
    assert triage.window.source.startswith("triage:") and triage.window.source not in part.text


def test_a_one_line_window_of_a_file_keeps_its_source_and_drops_only_the_span():
    window, miner = parsed(["Mar  2 10:01:07 bastion sshd[9211]: Failed password for root from 198.51.100.77 port 5 ssh2"],
                           "auth.log")
    [part] = build_digest(window, miner.templates(window.cluster_ids), []).parts(700, count)
    assert part.text.splitlines()[0].startswith(f"source: {window.source} (")
    assert part.text.splitlines()[1:] == ["rules fired: none", "lines:", f" L1: {window.events[0].raw}"]


def test_a_rare_request_shape_among_routine_ones_is_shown():
    """One template for every request (Drain merges the path token); the injected one has a shape of its own."""
    routine = [f'10.0.0.{i % 50 + 2} - - [01/Mar/2026:10:{i // 60:02d}:{i % 60:02d} +0000] "GET /item.php?id={i} HTTP/1.1" '
               f'200 {900 + i} "-" "Mozilla/5.0"' for i in range(400)]
    odd = '10.0.0.77 - - [01/Mar/2026:10:07:00 +0000] "GET /item.php?id=1%27%20or%20%271%27=%271 HTTP/1.1" 200 901 "-" "Mozilla/5.0"'
    window, miner = parsed(routine[:200] + [odd] + routine[200:], "access.log")
    digest = build_digest(window, miner.templates(window.cluster_ids), [])
    assert len(digest.templates) == 1 and 201 in digest.rare
    assert value_shape("/item.php?id=17") == value_shape("/item.php?id=4") != value_shape(window.events[200].fields["path"])
    assert any(201 in p.shown_lines for p in digest.parts(700, count))


@pytest.mark.parametrize("budget", [200, 700])
def test_parts_are_deterministic(budget):
    events = [sshd(i, f"message kind {i % 40} " + "z" * (i % 40)) for i in range(300)]
    first = [p.text for p in digest_of(events)[1].parts(budget, count)]
    again = [p.text for p in digest_of(events)[1].parts(budget, count)]
    assert first == again


def test_each_part_carries_the_baseline_notes_of_its_own_lines():
    """A focused review split over parts: every deviating line is read with what its baseline expected
    and with the deviation's other line (a request's body), and no part spends tokens on notes of lines
    it does not show."""
    events = [sshd(i, f"Accepted publickey for deploy from 10.0.0.{i % 9 + 1} port {5000 + i} ssh2") for i in range(200)]
    odd = list(range(10, 200, 10))  # 19 lines whose source address the baseline never saw for this user
    deviations = [Signal(rule_id="lw-baseline-entity", title="First-seen logon", level="low", category="auth_anomaly",
                         techniques=[], source="auth.log", line_numbers=[n + 1, n + 2], key=f"10.0.0.{n % 9 + 1}",
                         description=f"address 10.9.{n}.1 never seen for user deploy in 40 days; usual: 10.0.0.0/24")
                  for n in odd]
    miner = SourceMiner()
    window = next(windows(events, miner, source="auth.log", inode=1, fmt="syslog"))
    digest = build_digest(window, miner.templates(window.cluster_ids), deviations, focus=True)
    parts = digest.parts(260, count)
    assert len(parts) > 2
    for part in parts:
        noted = {int(line.split(":")[0].strip()[1:]) for line in part.text.splitlines()
                 if "never seen for user" in line}
        assert noted == {n for n in part.shown_lines if n - 1 in odd}
        assert set(part.shown_lines) == {n for head in noted for n in (head, head + 1)}  # together
        assert part.text.index("unlike this source's learned baseline:") < part.text.index("\nlines:\n")
        assert count(part.text) <= 260
    assert sorted(n for part in parts for n in part.shown_lines) == [n for o in odd for n in (o + 1, o + 2)]


def test_a_window_that_cannot_hold_a_web_request_offers_the_model_no_web_attack():
    """An sshd line is never `web_attack` (the 0.5B called every triage line that, issue 45): the
    grammar of a syslog window's prompt lacks it; a web server's request line forwarded to syslog
    lets it back."""
    from logwarden.app.digest import categories_for

    def window(fmt, raw):
        ev = Event(source="s", line_no=1, offset=0, raw=raw, format=fmt, ts=None, host="h", program="p",
                   message=raw, fields={}, inode=1)
        return Window("s", 1, fmt, events=[ev], cluster_ids=[1])

    ssh = window("syslog", "Mar 1 10:00:00 h sshd[1]: Failed password for root from 203.0.113.7 port 22 ssh2")
    part = DigestPart(text="x", refs=["L1"], lines_of={"L1": [1]}, shown_lines=[1], deviations=["L1"],
                      categories=categories_for(ssh))
    schema = part.schema()
    assert "web_attack" not in schema["$defs"]["Finding"]["properties"]["category"]["enum"]
    assert "brute_force" in schema["$defs"]["Finding"]["properties"]["category"]["enum"]
    verdict = schema["properties"]["verdicts"]["prefixItems"][0]["properties"]["category"]["enum"]
    assert "web_attack" not in verdict and "benign" in verdict
    forwarded = window("syslog", 'Mar 1 10:00:00 h nginx: 203.0.113.7 - - "GET /index.php?id=1 HTTP/1.1" 200 5')
    assert categories_for(forwarded) is None
    assert categories_for(window("access", '203.0.113.7 - - [x] "GET / HTTP/1.1" 200 5')) is None
