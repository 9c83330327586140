"""The shipped ATT&CK table: ids, display names, tactics, and coverage of every rule's tags."""

import json
import re
from importlib import resources

import pytest

from logwarden.app import attack
from logwarden.app.detect import load_rules


def test_lookup_gives_parent_and_sub_technique_name_and_tactic():
    found = attack.lookup("T1110.003")
    assert found is not None
    assert found.id == "T1110.003"
    assert found.name == "Brute Force: Password Spraying"
    assert found.tactic == "Credential Access"


@pytest.mark.parametrize("tid, name, tactic", [
    ("T1190", "Exploit Public-Facing Application", "Initial Access"),
    ("T1505.003", "Server Software Component: Web Shell", "Persistence"),
    ("T1070.001", "Indicator Removal: Clear Windows Event Logs", "Defense Evasion"),
    ("T1543.003", "Create or Modify System Process: Windows Service", "Persistence, Privilege Escalation"),
    ("T1003.001", "OS Credential Dumping: LSASS Memory", "Credential Access"),
    ("T1218.010", "System Binary Proxy Execution: Regsvr32", "Defense Evasion"),
    ("T1562.008", "Impair Defenses: Disable or Modify Cloud Logs", "Defense Evasion"),
    ("T1490", "Inhibit System Recovery", "Impact"),
    ("T1595.002", "Active Scanning: Vulnerability Scanning", "Reconnaissance"),
    ("T1548.003", "Abuse Elevation Control Mechanism: Sudo and Sudo Caching", "Privilege Escalation, Defense Evasion"),
])
def test_well_known_techniques_have_their_attack_names(tid, name, tactic):
    found = attack.lookup(tid)
    assert (found.name, found.tactic) == (name, tactic)


def test_multi_tactic_technique_lists_all_tactics():
    tactics = attack.tactics("T1078")
    assert tactics == ["Defense Evasion", "Persistence", "Privilege Escalation", "Initial Access"]


def test_ids_are_normalised_and_unknown_or_malformed_ids_give_none():
    assert attack.lookup(" t1059.001 ").id == "T1059.001"
    assert attack.is_known("t1486")
    assert attack.lookup("T9999") is None
    assert attack.lookup("T1110.999") is None
    assert attack.lookup("1.0.0.0") is None
    assert not attack.is_known("")


def test_table_is_large_and_well_formed():
    data = json.loads((resources.files("logwarden") / "data" / "attack_techniques.json").read_text())
    ids = list(data["techniques"])
    assert len(ids) >= 150
    assert all(re.fullmatch(r"T\d{4}(\.\d{3})?", i) for i in ids)
    for tid, entry in data["techniques"].items():
        assert entry["name"] and entry["tactics"], tid
        assert set(entry["tactics"]) <= set(data["tactics"]), tid
        if "." in tid:  # every sub-technique has its parent in the table
            assert tid.split(".")[0] in data["techniques"], tid


def test_brief_list_is_covered():
    wanted = ("T1110 T1110.001 T1110.002 T1110.003 T1110.004 T1078 T1078.003 T1078.004 T1190 T1059 "
              "T1059.001 T1059.003 T1059.004 T1505.003 T1595 T1595.002 T1595.003 T1046 T1136.001 T1098 "
              "T1543.003 T1569.002 T1070.001 T1562.001 T1562.008 T1105 T1003.001 T1027 T1548.003 "
              "T1053.003 T1053.005 T1021.004 T1071 T1041 T1048 T1530 T1537 T1485 T1486 T1490 T1499 T1498")
    assert [t for t in wanted.split() if not attack.is_known(t)] == []


def test_every_technique_used_by_a_shipped_rule_is_in_the_table():
    used = {t for rule in load_rules() for t in rule.techniques}
    assert used, "the shipped rules tag ATT&CK techniques"
    assert sorted(t for t in used if not attack.is_known(t)) == []
