"""The text gate (app/textgate.py) on answers the embedded model really gave.

`tests/data/model_answers.jsonl` holds answers of the embedded 0.5B model (Q4_0, llama.cpp, CPU),
recorded by `tests/data/collect_model_answers.py` on sample_logs (digest kept) and on realdata's
train side (digest withheld: third-party data; only review answers whose verdicts need no digest
are kept). Each row says how the gate judges its texts (`expect`); the tests below name the
failures issue 38 quotes that the model produced here.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from _repo import REPO, SAMPLE_LOGS

from logwarden.app.incidents.story import StoryStats, check_story
from logwarden.app.pipeline import Pipeline
from logwarden.app.postprocess import DEFAULT_RECOMMENDATION
from logwarden.app.run_options import RunOptions
from logwarden.app.store import open_store
from logwarden.app.textgate import REASONS, check, rejected_note, rejected_techniques
from logwarden.cli.summary import rejected_text
from logwarden.engine.api import Generation, GenStats
from logwarden.schemas.incident import Incident

CORPUS = REPO / "tests" / "data" / "model_answers.jsonl"
ANSWERS = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
RECORDED_SOURCE = "sample_logs/"  # the collector's digests name sources relative to the repository


def _judged(row: dict) -> dict:
    answer = json.loads(row["text"])
    if row["kind"] == "review":
        ids = row["lines_of"]
        return {"findings": [check(f["anomaly"], row["digest"], ids=ids).reason for f in answer["findings"]],
                "recommendation": check(answer["recommendation"], row["digest"], ids=ids).reason}
    return {"title": check(answer["title"], row["digest"]).reason,
            "summary": check(answer["summary"], row["digest"]).reason,
            "next_steps": [check(s, row["digest"], min_words=1).reason for s in answer["next_steps"]]}


def _texts(kind: str, name: str):
    """(text, row) for every recorded text of one field: anomaly, recommendation, title, summary."""
    for row in ANSWERS:
        if row["kind"] != kind:
            continue
        answer = json.loads(row["text"])
        for text in [f[name] for f in answer["findings"]] if name == "anomaly" else [answer[name]]:
            yield text, row


@pytest.mark.parametrize("row", ANSWERS, ids=[f"{r['kind']}{i}" for i, r in enumerate(ANSWERS)])
def test_every_recorded_answer_is_judged_as_recorded(row):
    assert _judged(row) == row["expect"]
    assert set(_reasons(row["expect"])) <= set(REASONS)


def _reasons(expect: dict) -> list[str]:
    values = [v for value in expect.values() for v in (value if isinstance(value, list) else [value])]
    return [v for v in values if v]


def test_the_corpus_holds_both_rejected_and_passing_texts_of_every_kind():
    reasons = Counter(r for row in ANSWERS for r in _reasons(row["expect"]))
    assert {"empty", "bare", "instructions", "digest", "json", "ungrounded"} <= set(reasons)
    passed = [t for t, row in _texts("story", "summary") if check(t, row["digest"]).passed]
    assert len(passed) >= 5  # the gate is not a wall: most story summaries pass


def test_a_lone_comma_for_an_anomaly_is_rejected_as_empty():
    commas = [(t, row) for t, row in _texts("review", "anomaly") if t.strip() == ","]
    assert commas  # the model wrote "," as a finding's anomaly (issue 38: 399 SQL-injection records)
    assert {check(t, row["digest"], ids=row["lines_of"]).reason for t, row in commas} == {"empty"}


def test_the_prompts_own_instruction_copied_back_as_the_recommendation_is_rejected():
    copies = [(t, row) for t, row in _texts("review", "recommendation") if "say why the lines are ordinary" in t]
    assert len(copies) >= 4  # issue 38: 431 recommendations were this sentence
    for text, row in copies:
        checked = check(text, row["digest"], ids=row["lines_of"])
        assert checked.reason == "instructions" and checked.text == ""


def test_a_digest_template_or_row_copied_back_as_the_anomaly_is_rejected():
    copied = {t: check(t, row["digest"], ids=row["lines_of"]).reason for t, row in _texts("review", "anomaly")
              if row["digest"] and ("<*>" in t or "known endpoints" in t)}
    assert "1309x GET <*> HTTP/<NUM>" in copied
    assert set(copied.values()) == {"digest"}


def test_json_written_as_the_anomaly_is_rejected():
    written = [t for t, _ in _texts("review", "anomaly") if t.lstrip().startswith("{")]
    assert written and {check(t, "").reason for t in written} == {"json"}


def test_a_plain_story_summary_is_kept_whole():
    plain = "On web01, a system failure occurred. The incident was caused by a kernel panic. The host stopped or rebooted."
    [(text, row)] = [(t, row) for t, row in _texts("story", "summary") if t == plain]
    assert check(text, row["digest"]).text == plain


def test_technique_ids_outside_the_shipped_table_are_named():
    # not seen from the model in the recorded runs (issue 38 quotes T2000-T2002): the table check itself
    assert rejected_techniques(["T1190", "T2000", "T1505.003", "T2000"]) == ["T2000"]
    row = next(r for r in ANSWERS if r["kind"] == "review" and r["digest"])
    assert check("The request exploited the login page via T2001 and SQL injection.", row["digest"]).reason == "technique"


def test_a_story_whose_title_copies_the_prompt_keeps_the_rules_title_and_says_why():
    row = next(r for r in ANSWERS if r["kind"] == "story" and r["expect"]["title"] == "instructions"
               and r["expect"]["summary"] is None)
    incident = Incident(id="inc-1", title="brute force on web01 (3 records)", risk_level="high", category="brute_force",
                        record_ids=row["record_ids"])
    stats = StoryStats()
    checked = check_story(incident, row["text"], row["digest"], stats)
    assert checked is not None and checked.story_by == "llm"
    assert checked.title == incident.title and checked.rejected["title"] == "instructions"
    assert checked.summary and stats.texts_rejected["instructions"] >= 1
    assert "prompt's or the schema's instructions" in rejected_note(checked.rejected)


def test_a_fragment_of_the_digest_in_braces_is_a_copy_of_the_digest():
    """The 1.5B's anomaly on a held-out CSIC request was the request's own parameter in braces (the
    digest is third-party data, so the shape is rebuilt here): it adds nothing to the rule's text."""
    digest = "unlike this source's learned baseline:\n L12: GET /shop/pay.jsp?B1=Pay+at+the+desk%2F&qty=1 HTTP/1.1"
    assert check("{B1=Pay+at+the+desk%2F}", digest, ids=["L12"]).reason == "digest"
    assert check('"B1=Pay+at+the+desk%2F"', digest, ids=["L12"]).reason == "digest"
    assert check("B1 holds a slash, never seen in its values", digest, ids=["L12"]).passed


# Recommendations the models wrote on realdata's held-out side (GPU run of 2026-12-07, issue 38; the
# digests are third-party and not kept): the 0.5B's advice to destroy the evidence, both models'
# "nothing to do" on records a rule had flagged.
HELD_OUT_TAMPER = ["remove the line from the log", "Remove the log digest from the source.",
                   "rebuild the log with the new baseline", "remove the lines from the digest"]
HELD_OUT_DISMISSAL = ["No action needed.", "No recommendation needed.", "No further action needed.",
                      "No recommendation available."]
DIGEST = ("source: auth.log (syslog)\n L3: Failed password for root from 203.0.113.7 port 4242 ssh2\n"
          " L9: Accepted publickey for root from 203.0.113.7: key added to /root/.ssh/authorized_keys")


@pytest.mark.parametrize("text", HELD_OUT_TAMPER)
def test_advice_to_destroy_the_evidence_is_rejected(text):
    assert check(text, DIGEST).reason == "tamper"


@pytest.mark.parametrize("text", HELD_OUT_DISMISSAL)
def test_nothing_to_do_said_of_a_flagged_record_is_rejected(text):
    assert check(text, DIGEST).reason == "dismissal"


def test_a_dismissal_may_explain_a_benign_verdict():
    assert check("No unusual values in these lines.", DIGEST, dismissal_ok=True).passed
    assert check("No unusual values in these lines.", DIGEST).reason == "dismissal"


def test_the_rest_of_a_text_stays_when_one_sentence_advises_deleting_the_log():
    said = check("Block 203.0.113.7 at the firewall. Then delete the log lines it wrote.", DIGEST)
    assert said.text == "Block 203.0.113.7 at the firewall."


@pytest.mark.parametrize("text", [
    "Remove the key added to /root/.ssh/authorized_keys and reset the root password.",
    "Review the logs of 203.0.113.7 for further logins.",
    "Block 203.0.113.7 and check whether the root login from it succeeded.",
    "Preserve the auth.log lines as evidence before rotating it."])
def test_remediation_that_removes_the_attacker_s_access_passes(text):
    assert check(text, DIGEST).passed, check(text, DIGEST)
