"""Triage's answer fits the line (issue 45): a category the line cannot be is set aside ("model
unsure", benign when no rule fired), a technique of another tactic or unknown to the ATT&CK table is
left out, and the verdict says who decided. The model here is scripted with the answers the 0.5B gave
on real lines (`web_attack` for an sshd failure); the real model's run is in tests/cli/test_triage_trust.py."""

from __future__ import annotations

import pytest
from _fake_engine import FakeEngine

from logwarden.app.fit import fit, technique_fits
from logwarden.app.postprocess import LLMResult
from logwarden.app.triage import Assessment, prepare
from logwarden.schemas import LLMAssessment

SSHD_FAILURE = ("Dec 10 06:55:48 LabSZ sshd[24200]: Failed password for invalid user webmaster from 173.234.31.186 "
                "port 38926 ssh2")  # LogHub OpenSSH_2k.log
SUDO_SETUID = ("Mar  3 10:17:44 web1 sudo: www-data : TTY=pts/0 ; PWD=/var/www ; USER=root ; "
               "COMMAND=/bin/chmod u+s /bin/bash")  # the line issue 45 triaged
BGL_FATAL = ("KERNDTLB 1118536327 2005.06.11 R30-M0-N9-C:J16-U01 2005-06-11-17.32.07.581048 R30-M0-N9-C:J16-U01 "
             "RAS KERNEL FATAL data TLB error interrupt")  # LogHub BGL_2k.log


def answer(category: str, techniques: list[str], level: str = "high") -> dict:
    return {"findings": [{"evidence": ["L1"], "anomaly": "A request that looks like an injection attempt.",
                          "category": category, "techniques": techniques, "risk_level": level}],
            "recommendation": "Block the source address."}


def triaged(line: str, reply: dict) -> tuple[Assessment, list]:
    triage = prepare(line)
    engine = FakeEngine(reply)
    stream = triage.stream(engine)
    "".join(stream)
    assessment = Assessment(triage, stream, engine)
    return assessment, assessment.records()


def test_an_sshd_line_called_web_attack_is_benign_and_the_model_unsure():
    assessment, records = triaged(SSHD_FAILURE, answer("web_attack", ["T1190"]))
    assert records == []
    why = assessment.why(records)
    assert why.startswith("no rule fired; model unsure") and "web_attack" in why
    assert assessment.unsure() == ["it called L1 web_attack, which these lines cannot be: set aside"]


def test_a_kernel_fatal_called_web_attack_keeps_the_rule_s_failure_and_says_the_model_was_unsure():
    assessment, records = triaged(BGL_FATAL, answer("web_attack", ["T1190"]))
    assert [(r.category, r.risk_level, r.detections) for r in records] == [("system_failure", "high", ["lw-kernel-oops"])]
    assert records[0].techniques == []
    assert assessment.why(records).startswith("a rule fired; model unsure")


def test_techniques_that_do_not_fit_the_category_or_the_table_are_left_out():
    assessment, records = triaged(SUDO_SETUID, answer("privilege_escalation", ["T1190", "T1548.001", "T1999"]))
    [record] = records
    assert record.category == "privilege_escalation" and record.risk_level == "high"
    ids = {t.id for t in record.techniques}
    assert "T1548.001" in ids and "T1190" not in ids and "T1999" not in ids
    assert assessment.unsure() == ["T1190, T1999 do not fit privilege_escalation (not in the ATT&CK table, "
                                   "or of another tactic): left out"]


def test_a_rules_only_triage_says_no_model_was_asked():
    triage = prepare(SSHD_FAILURE)
    assessment = Assessment(triage, None, None)
    assert assessment.why(assessment.records()) == "rules only: no rule fired; no model was asked"
    assert assessment.unsure() == []


@pytest.mark.parametrize("category, technique, fits", [
    ("brute_force", "T1110.001", True), ("web_attack", "T1190", True), ("system_failure", "T1190", False),
    ("system_failure", "T1499", True), ("data_exfiltration", "T1110", False), ("privilege_escalation", "T1548.003", True),
    ("reconnaissance", "T0000", False), ("brute_force", "T1190", False), ("brute_force", "T1078.003", True),
])
def test_a_technique_fits_by_its_tactics(category, technique, fits):
    assert technique_fits(category, technique) is fits


def test_an_answer_without_an_assessment_is_left_as_it_is():
    failed = LLMResult(assessment=None, error="model output was not valid JSON")
    assert fit(failed, ["brute_force"]).result is failed
    fine = LLMResult(assessment=LLMAssessment.model_validate(answer("brute_force", ["T1110"])))
    assert fit(fine, None).unsure == [] and fit(fine, None).result.assessment.findings[0].techniques == ["T1110"]


@pytest.mark.parametrize("anomaly, reason", [(",", "empty"), ("T1110", "bare"),
                                             ("the concrete next action (recommend)", "instructions")])
def test_triage_texts_pass_the_record_gate_a_failed_one_keeps_the_rules_text(anomaly, reason, capsys):
    # the 0.5B's real anomalies of issue 38: a lone comma, a bare technique id, its schema's words
    from logwarden.app.textgate import REASONS
    from logwarden.cli.commands.triage import _print_records

    reply = answer("privilege_escalation", ["T1548.001"])
    reply["findings"][0]["anomaly"] = anomaly
    assessment, [record] = triaged(SUDO_SETUID, reply)
    _print_records([record], assessment)
    assert f"anomaly: {REASONS[reason]}" in capsys.readouterr().out  # the terminal says it, as records show does
    rules_only, [rule_record] = triaged(SUDO_SETUID, {"findings": [], "recommendation": ""})
    assert record.anomaly == rule_record.anomaly
    assert record.rejected.get("anomaly") == reason
