"""Issue 45 item 3: every place says which model runs — name, quantisation, adapter or why none.
`analyze`, `triage` and `records show` (text and `--json`), through the real adapter choice
(`app/backends.open_engine`): only the load of the weights is a stand-in here, and one test runs
the real embedded model on the CPU (llama.cpp) path. Lines: LogHub OpenSSH_2k."""

from __future__ import annotations

import json

import pytest
from _fake_engine import FakeEngine
from click.testing import CliRunner

from logwarden.app.config import get_settings
from logwarden.cli.main import main
from logwarden.engine import load
from logwarden.prompts import PROMPT_VERSION
from logwarden.schemas.assessment import schema_refs

SSHD = [  # OpenSSH_2k.log lines 13-18 and 30-36
    "Dec 10 07:11:42 LabSZ sshd[24224]: Invalid user chen from 202.100.179.208",
    "Dec 10 07:11:42 LabSZ sshd[24224]: input_userauth_request: invalid user chen [preauth]",
    "Dec 10 07:11:42 LabSZ sshd[24224]: pam_unix(sshd:auth): check pass; user unknown",
    "Dec 10 07:11:42 LabSZ sshd[24224]: pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= "
    "rhost=202.100.179.208 ",
    "Dec 10 07:11:44 LabSZ sshd[24224]: Failed password for invalid user chen from 202.100.179.208 port 32484 ssh2",
    "Dec 10 07:11:44 LabSZ sshd[24224]: Received disconnect from 202.100.179.208: 11: Bye Bye [preauth]",
    "Dec 10 07:13:56 LabSZ sshd[24227]: message repeated 5 times: [ Failed password for root from 5.36.59.76 port 42393 ssh2]",
    "Dec 10 07:13:56 LabSZ sshd[24227]: Disconnecting: Too many authentication failures for root [preauth]",
    "Dec 10 07:13:56 LabSZ sshd[24227]: PAM 5 more authentication failures; logname= uid=0 euid=0 tty=ssh ruser= "
    "rhost=5.36.59.76.dynamic-dsl-ip.omantel.net.om  user=root",
]
WHY_NO_ADAPTER = f"the shipped security-v2 was trained on prompt analyze_v2, logwarden sends {PROMPT_VERSION}"


def finds_the_first_line(request) -> dict:
    """A model that reports the first line it was shown as a brute force."""
    refs = schema_refs(request.schema) or ["L1"]
    return {"findings": [{"evidence": refs[:1], "anomaly": "Repeated failed SSH logins", "category": "brute_force",
                          "techniques": ["T1110"], "risk_level": "medium"}], "recommendation": "Block the address."}


class QuantisedFake(FakeEngine):
    def describe(self) -> dict:
        return {**super().describe(), "quant": "Q4_0"}


@pytest.fixture
def weights(monkeypatch):
    """The weights' load stood in for; what it was asked for is kept (`adapter`)."""
    asked: dict = {}

    def load_engine(**kw):
        asked.update(kw)
        return QuantisedFake(finds_the_first_line, model_name=kw["model"], adapter_name=kw["adapter"])

    monkeypatch.setattr(load, "load_engine", load_engine)
    get_settings.cache_clear()
    yield asked
    get_settings.cache_clear()


def _auth_log(tmp_path):
    log = tmp_path / "auth.log"
    log.write_text("\n".join(SSHD) + "\n")
    return log


def _run(*args):
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result


def test_analyze_says_which_model_ran_and_why_no_adapter(tmp_path, weights):
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    done = _run("analyze", str(_auth_log(tmp_path)), "--llm-policy", "all", "--final", "--json", "--db", db)
    assert weights["adapter"] is None  # the default: security-v2 is not applied on any engine
    facts = json.loads(done.stdout)["model"]
    assert facts == {"model": "embedded", "quant": "Q4_0", "adapter": None,
                     "adapter_note": facts["adapter_note"]}
    assert facts["adapter_note"].startswith(WHY_NO_ADAPTER)
    said = " ".join(done.stderr.split())  # the summary wraps at the terminal's width
    assert f"model embedded (Q4_0), adapter none: {WHY_NO_ADAPTER}" in said

    records = json.loads(done.stdout)["records"]
    by_model = next(r for r in records if r["decided_by"] != "rules")
    shown = _run("records", "show", by_model["id"], "--db", db)
    assert f"model embedded (Q4_0), adapter none: {WHY_NO_ADAPTER}" in " ".join(shown.stdout.split())
    assert json.loads(_run("records", "show", by_model["id"], "--json", "--db", db).stdout)["model_facts"] == facts

    by_rules = next((r for r in records if r["decided_by"] == "rules"), None)
    if by_rules is not None:
        shown = _run("records", "show", by_rules["id"], "--json", "--db", db)
        assert json.loads(shown.stdout)["model_facts"]["adapter_note"].startswith("decided by the rules; the run's model")


def test_an_adapter_turned_off_or_a_rules_only_run_says_so(tmp_path, weights):
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    off = _run("triage", SSHD[4], "--adapter", "none", "--json", "--no-store", "--db", db)
    assert json.loads(off.stdout)["model"]["adapter_note"] == "--adapter none"
    assert "adapter none: --adapter none" in off.stderr

    rules = _run("analyze", str(_auth_log(tmp_path)), "--rules-only", "--json", "--db", db)
    assert json.loads(rules.stdout)["model"] == {"model": None, "quant": None, "adapter": None,
                                                 "adapter_note": "rules only: no model runs"}
    assert "model: none (rules only: no model runs)" in rules.stderr
    record = json.loads(rules.stdout)["records"][0]
    shown = _run("records", "show", record["id"], "--db", db)
    assert "model: none (decided by the rules)" in shown.stdout


@pytest.mark.model
def test_triage_on_the_real_embedded_model_runs_no_adapter_and_says_why(tmp_path):
    """The CPU path as shipped (llama.cpp, the derived Q4_0): no adapter is loaded, and the answer says so."""
    done = _run("triage", SSHD[4], "--json", "--no-store", "--db", f"sqlite:///{tmp_path / 'lw.db'}")
    facts = json.loads(done.stdout)["model"]
    assert (facts["model"], facts["quant"], facts["adapter"]) == ("embedded", "Q4_0", None)
    assert facts["adapter_note"].startswith(WHY_NO_ADAPTER)
    assert all(r["adapter"] is None for r in json.loads(done.stdout)["records"])
    assert f"adapter none: {WHY_NO_ADAPTER}" in " ".join(done.stderr.split())
