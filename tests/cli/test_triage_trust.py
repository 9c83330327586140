"""`logwarden triage` a newcomer can trust (issue 45), through the CLI on real public lines: the
service account's setuid shell and the kernel FATAL are no longer benign, a rules-only triage says
no model was asked, and with the real embedded model an sshd line is never `web_attack`.

The lines: the www-data line is the one issue 45 triaged; BGL_FATAL is from LogHub BGL_2k.log and
SSHD_FAILURE from LogHub OpenSSH_2k.log (logpai/loghub)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from logwarden.app.fit import technique_fits
from logwarden.cli.main import main

SUDO_SETUID = ("Mar  3 10:17:44 web1 sudo: www-data : TTY=pts/0 ; PWD=/var/www ; USER=root ; "
               "COMMAND=/bin/chmod u+s /bin/bash")
BGL_FATAL = ("KERNDTLB 1118536327 2005.06.11 R30-M0-N9-C:J16-U01 2005-06-11-17.32.07.581048 R30-M0-N9-C:J16-U01 "
             "RAS KERNEL FATAL data TLB error interrupt")
SSHD_FAILURE = ("Dec 10 06:55:48 LabSZ sshd[24200]: Failed password for invalid user webmaster from 173.234.31.186 "
                "port 38926 ssh2")


def triage(*args: str) -> dict:
    result = CliRunner().invoke(main, ["triage", *args, "--no-store", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout[result.stdout.index("{"):])


def test_rules_only_a_service_account_s_setuid_shell_is_high_privilege_escalation():
    report = triage(SUDO_SETUID, "--rules-only")
    assert (report["verdict"], report["category"]) == ("high", "privilege_escalation")
    assert report["rules"] == ["lw-sudo-service-account-root", "lw-sudo-setuid-shell"]
    assert {"T1548.001", "T1548.003"} <= {t["id"] for t in report["records"][0]["techniques"]}
    assert report["rules_only"] is True and report["why"] == "rules only: a rule fired; no model was asked"


def test_rules_only_a_kernel_fatal_is_a_system_failure_not_benign_and_not_an_attack():
    report = triage(BGL_FATAL, "--rules-only")
    assert (report["verdict"], report["category"], report["rules"]) == ("high", "system_failure", ["lw-kernel-oops"])
    assert report["records"][0]["techniques"] == []


def test_rules_only_benign_says_no_model_was_asked():
    result = CliRunner().invoke(main, ["triage", SSHD_FAILURE, "--rules-only", "--no-store"], catch_exceptions=False)
    assert result.exit_code == 0
    assert result.stdout.strip() == "verdict: benign (rules only: no rule fired; no model was asked)"
    assert "the model saw nothing" not in result.stdout


@pytest.mark.model
def test_with_the_model_an_sshd_line_is_never_a_web_attack():
    report = triage(SSHD_FAILURE, "--threads", "2")
    assert report["rules_only"] is False and report["stats"]["new_tokens"] > 0
    assert report["category"] != "web_attack" and all(r["category"] != "web_attack" for r in report["records"])
    kept = {f["category"] for f in (report["assessment"] or {}).get("findings", [])} - {"web_attack"}
    assert report["why"].startswith("no rule fired; ") and (kept or "model unsure" in report["why"]
                                                           or "nothing abnormal" in report["why"])


@pytest.mark.model
def test_with_the_model_the_setuid_shell_keeps_the_rules_floor_and_fitting_techniques():
    report = triage(SUDO_SETUID, "--threads", "2")
    assert (report["verdict"], report["category"]) in {("high", "privilege_escalation"),
                                                       ("critical", "privilege_escalation")}
    techniques = [t["id"] for t in report["records"][0]["techniques"]]
    assert "T1548.001" in techniques and all(technique_fits("privilege_escalation", t) for t in techniques)
    assert report["why"].startswith("a rule fired; ")
