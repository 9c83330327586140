"""`assess`, the one way a snippet is assessed (`logwarden triage`, the UI's triage page and
`records explain` call it): the run's rule packs, prompt budget and answer length are what it
uses; without an engine the rules decide alone, with one the model's answer streams first. The
engine is the tests' FakeEngine (the code under test is the path around it)."""

from __future__ import annotations

from _fake_engine import FakeEngine

from logwarden.app.config import Settings
from logwarden.app.run_options import RunOptions
from logwarden.app.triage import assess

BRUTE = "\n".join(f"Mar 11 02:14:{i:02d} web-01 sshd[{2211 + i}]: Failed password for root from 203.0.113.45 port "
                  f"{40000 + i} ssh2" for i in range(12))
CRON = "Mar  1 10:00:00 web01 CRON[1]: (root) CMD (run-parts /etc/cron.hourly)"
PACK = """title: Canary word
name: lw-test-canary
level: high
logsource: {product: linux, service: syslog}
detection:
  sel: {message|contains: canary-7731}
  condition: sel
"""


def test_without_an_engine_the_rules_decide_alone():
    options = RunOptions.from_settings(Settings())
    brute = assess(BRUTE, options)
    assert brute.stream is None
    records = brute.records()
    assert records and {r.decided_by for r in records} == {"rules"} and records[0].category == "brute_force"
    assert assess(CRON, options).records() == []  # benign: no rule fired, no record


def test_the_runs_packs_reach_the_snippet(tmp_path):
    (tmp_path / "canary.yml").write_text(PACK)
    line = "Mar  1 10:00:00 web01 app[3]: token canary-7731 seen"
    with_pack = assess(line, RunOptions.from_settings(Settings(), sigma=[str(tmp_path / "canary.yml")]))
    assert "lw-test-canary" in {s.rule_id for s in with_pack.triage.signals}
    assert "lw-test-canary" not in {s.rule_id for s in assess(line, RunOptions.from_settings(Settings())).triage.signals}


def test_with_an_engine_the_answer_streams_within_the_runs_budgets_and_makes_the_records():
    cut_off = '{"findings": ['  # an answer the token budget ended
    engine = FakeEngine(cut_off)
    options = RunOptions.from_settings(Settings(), max_new_tokens=77, prompt_token_budget=300)
    assessment = assess(BRUTE, options, engine)
    assert assessment.stream is not None and "".join(assessment.stream) == cut_off
    assert set(engine.max_new_tokens) == {77}
    assert engine.prompts == assessment.triage.prompts  # the parts the budget cut, each asked once
    records = assessment.records()  # the rules' floor, with the model's failure and its name on it
    assert records and all(r.decided_by == "rules" and r.model == "fake" and r.llm_error for r in records)
