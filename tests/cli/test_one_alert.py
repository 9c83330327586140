"""One alert per thing that happened (issue 45 item 1), through the real CLI: two packs firing on
one `useradd` line give one record naming both rules, under the same id on every run; a record
linked to nothing stays an alert (a record in no incident); a chain of records is an incident."""

from __future__ import annotations

import json

from _incident_helpers import ATTACKER, OTHER, burst, write
from click.testing import CliRunner

from logwarden.cli.main import main as cli

# A second pack beside logwarden's own, as SigmaHQ's "Privileged User Has Been Created" is: a
# keyword rule on the line logwarden's `lw-user-created` reads, of another category (its first
# tactic, privilege escalation, against logwarden's account persistence): two records before.
PRIVILEGED_USER = """title: Privileged user created (a second pack)
id: 7d2f41a8-3c55-4b8e-9a61-2f0c5e8d1b34
level: high
tags: [attack.privilege-escalation, attack.persistence, attack.t1136.001, attack.t1098]
logsource: {product: linux}
detection:
  new_user: ['new user']
  root_ids: ['UID=0,', 'GID=0,']
  condition: all of them
"""
USERADD = ("Mar 10 07:04:00 web1 useradd[4242]: new user: name=backdoor, UID=0, GID=0, home=/root, "
           "shell=/bin/bash, from=/dev/pts/1")


def run(*args: str):
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result


def records(db: str) -> list[dict]:
    return json.loads(run("records", "list", "--min-risk", "info", "--json", "--db", db).stdout)


def test_two_packs_on_one_useradd_line_give_one_record_naming_both_rules(tmp_path):
    pack = tmp_path / "privileged_user.yml"
    pack.write_text(PRIVILEGED_USER)
    log = write(tmp_path / "logs" / "auth.log", [USERADD])
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    analyze = ("analyze", str(log), "--rules-only", "--year", "2026", "--sigma", str(pack), "--db", db)
    run(*analyze)
    [record] = records(db)
    assert {"lw-user-created", "7d2f41a8-3c55-4b8e-9a61-2f0c5e8d1b34"} <= set(record["detections"])
    assert record["risk_level"] == "high"  # the riskier rule's level
    assert "T1136.001" in {t["id"] for t in record["techniques"]}
    assert "Privileged user created" in record["anomaly"] and "Local user account created" in record["anomaly"]
    run(*analyze)  # the same line again: the same record, not a second one
    assert [r["id"] for r in records(db)] == [record["id"]]


def test_a_lone_medium_record_stays_an_alert_and_a_chain_is_an_incident(tmp_path):
    """One burst from OTHER (a medium record, linked to nothing) and two bursts from ATTACKER 20
    minutes apart (two records linked by the address)."""
    write(tmp_path / "logs" / "auth.log", burst("web01", 10, 0, ATTACKER) + burst("web01", 10, 20, ATTACKER, pid=2000)
          + burst("web01", 13, 0, OTHER, pid=3000))
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    run("analyze", str(tmp_path / "logs"), "--rules-only", "--year", "2026", "--db", db)
    alone = [r for r in records(db) if r["indicators"]["ips"] == [OTHER]]
    assert [r["risk_level"] for r in alone] == ["medium"]
    [incident] = json.loads(run("incidents", "list", "--json", "--db", db).stdout)
    assert alone[0]["id"] not in incident["record_ids"] and len(incident["record_ids"]) == 2
    assert f"ip={ATTACKER}" in incident["pivots"]
    assert json.loads(run("incidents", "group", "--rules-only", "--json", "--db", db).stdout)["incidents"] == 1
