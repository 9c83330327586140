"""Incidents exported through `logwarden export --kind incidents`: JSONL that reads back as the
stored incident, ECS with the related entities, OCSF Incident Findings (class 2005) naming the
Detection Findings of their records."""

from __future__ import annotations

import json

import pytest
from _incident_helpers import ATTACKER, OTHER, burst, write
from _schemas import ecs_problems, ocsf_problems
from click.testing import CliRunner

from logwarden.cli.main import main as cli
from logwarden.schemas.incident import Incident


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture()
def db(tmp_path) -> str:
    write(tmp_path / "logs" / "auth.log", burst("web01", 10, 0, ATTACKER) + burst("web01", 10, 20, ATTACKER,
                                                                                 pid=2000, accepted=True)
          + burst("web01", 13, 0, OTHER, pid=3000) + burst("web01", 13, 20, OTHER, pid=4000))
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
    assert sorted(len(e["finding_info_list"]) for e in incidents) == [2, 2]
    assert all(ocsf_problems(e, "events/findings/incident_finding.json") == [] for e in incidents)


def test_a_closed_incident_exports_valid_ocsf_1_7_and_ecs_9_4_with_its_verdict(db):
    top = exported(db, "--kind", "incidents", "--format", "jsonl")[0]
    assert run("incidents", "review", top["id"], "--status", "closed", "--reason", "true_positive", "--owner", "ana",
               "--reviewer", "ana", "--db", db).exit_code == 0
    event = next(e for e in exported(db, "--kind", "incidents", "--format", "ocsf") if e["metadata"]["uid"] == top["id"])
    assert ocsf_problems(event, "events/findings/incident_finding.json") == []
    assert (event["status_id"], event["verdict_id"], event["assignee"]) == (5, 2, {"name": "ana"})
    doc = next(d for d in exported(db, "--kind", "incidents", "--format", "ecs") if d["event"]["id"] == top["id"])
    assert ecs_problems(doc) == [] and doc["ecs"]["version"] == "9.4.0"
    assert {k: doc["kibana"]["alert"][k] for k in ("workflow_status", "workflow_reason", "workflow_user")} == {
        "workflow_status": "closed", "workflow_reason": "true_positive", "workflow_user": "ana"}
    members = [r for r in exported(db, "--format", "ocsf") if r["finding_info"]["uid"] in top["record_ids"]]
    assert [(r["status_id"], r["verdict_id"]) for r in members] == [(4, 2), (4, 2)]  # its records closed with it


def test_jsonl_reads_back_and_ecs_names_the_entities(db):
    [top, _] = [Incident.model_validate(i) for i in exported(db, "--kind", "incidents", "--format", "jsonl")]
    assert top.risk_level == "high" and len(top.record_ids) == 2
    ecs = exported(db, "--kind", "incidents", "--format", "ecs", "--min-risk", "high")
    assert len(ecs) == 1 and ecs[0]["event"]["id"] == top.id
    assert ecs[0]["related"]["ip"] == [ATTACKER] and ecs[0]["logwarden"]["incident"]["record_ids"] == top.record_ids
    technique = ecs[0]["threat"]["technique"]  # ECS: sub-techniques apart, under their parents
    assert technique["subtechnique"]["id"] == [t for t in top.techniques if "." in t]
    assert set(technique["id"]) == {t.split(".")[0] for t in top.techniques}
    assert all(technique["name"]) and all(technique["subtechnique"]["name"])


def test_formats_that_carry_records_only_are_refused(db):
    refused = run("export", "--kind", "incidents", "--format", "cef", "--db", db)
    assert refused.exit_code == 2 and "jsonl, ecs, ocsf" in refused.output
