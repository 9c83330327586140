"""Incidents exported through `logwarden export --kind incidents`: JSONL that reads back as the
stored incident, ECS with the related entities, OCSF Incident Findings (class 2005) naming the
Detection Findings of their records."""

from __future__ import annotations

import json

import pytest
from _incident_helpers import ATTACKER, OTHER, burst, write
from click.testing import CliRunner

from logwarden.cli.main import main as cli
from logwarden.schemas.incident import Incident


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture()
def db(tmp_path) -> str:
    write(tmp_path / "logs" / "auth.log", burst("web01", 10, 0, ATTACKER) + burst("web01", 10, 20, ATTACKER,
                                                                                 pid=2000, accepted=True)
          + burst("web01", 13, 0, OTHER, pid=3000))
    url = f"sqlite:///{tmp_path / 'lw.db'}"
    assert run("analyze", str(tmp_path / "logs"), "--rules-only", "--year", "2026", "--db", url).exit_code == 0
    return url


def exported(db: str, *args: str) -> list[dict]:
    result = run("export", *args, "--db", db)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_ocsf_incident_findings_name_their_records_detection_findings(db):
    incidents = exported(db, "--kind", "incidents", "--format", "ocsf")
    findings = {f["finding_info"]["uid"] for f in exported(db, "--format", "ocsf")}
    assert len(incidents) == 2
    for event in incidents:
        assert (event["class_uid"], event["type_uid"], event["category_uid"]) == (2005, 200501, 2)
        assert event["status"] == "New" and event["start_time"] <= event["end_time"]
        related = [f["uid"] for f in event["finding_info_list"]]
        assert related and set(related) <= findings
    assert sorted(len(e["finding_info_list"]) for e in incidents) == [1, 3]


def test_jsonl_reads_back_and_ecs_names_the_entities(db):
    [top, _] = [Incident.model_validate(i) for i in exported(db, "--kind", "incidents", "--format", "jsonl")]
    assert top.risk_level == "high" and len(top.record_ids) == 3
    ecs = exported(db, "--kind", "incidents", "--format", "ecs", "--min-risk", "high")
    assert len(ecs) == 1 and ecs[0]["event"]["id"] == top.id
    assert ecs[0]["related"]["ip"] == [ATTACKER] and ecs[0]["logwarden"]["incident"]["record_ids"] == top.record_ids
    assert ecs[0]["threat"]["technique"]["id"] == top.techniques


def test_formats_that_carry_records_only_are_refused(db):
    refused = run("export", "--kind", "incidents", "--format", "cef", "--db", db)
    assert refused.exit_code == 2 and "jsonl, ecs, ocsf" in refused.output
