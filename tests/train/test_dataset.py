"""The training-set generator: deterministic, rendered through the real pipeline stages, targets
whose findings point at exactly the incident's lines, respect the rule floor and name only what the
prompt shows, prompt injections ignored, a seed-split train/val, and no sample_logs evaluation line
leaking into training prompts."""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

import pytest
from _repo import REPO
from click.testing import CliRunner

from logwarden.app.digest import DigestPart
from logwarden.app.events import Signal
from logwarden.cli.commands.dataset import dataset
from logwarden.prompts import FENCE, system_prompt
from logwarden.schemas import LLMAssessment, risk_rank
from logwarden.schemas.assessment import answer_schema
from logwarden.train.dataset import DATASET_VERSION, build_dataset, example_at, examples, render, truths, ungrounded_in
from logwarden.train.scenarios import GENERATORS, Noise, cloud_incident_day
from logwarden.train.targets import Truth, answer

SAMPLES = REPO / "sample_logs"
N = 160


@pytest.fixture(scope="module")
def batch():
    return [example_at(f"5/train/{i}") for i in range(N)]


def test_same_key_same_example_and_different_keys_differ():
    a, _ = example_at("9/train/3")
    b, _ = example_at("9/train/3")
    c, _ = example_at("9/train/4")
    assert a.as_json() == b.as_json()
    assert a.user != c.user


def test_prompt_is_the_pipelines_prompt(batch):
    for example, rendered in batch[:20]:
        assert example.system == system_prompt()
        assert example.user.startswith("Untrusted log digest") and FENCE in example.user
        assert f"source: {rendered.scenario.path}" in example.user
        assert "rules fired:" in example.user and "\nlines:\n" in example.user
        assert example.meta["schema"] == rendered.parts[0].schema()


def test_targets_validate_and_respect_the_rule_floor(batch):
    for example, rendered in batch:
        answer = LLMAssessment.model_validate_json(example.assistant)
        lines_of = rendered.parts[0].lines_of
        for finding in answer.findings:
            cited = {n for ref in finding.evidence for n in lines_of[ref]}
            floors = [risk_rank(s.level) for s in rendered.signals
                      if s.category == finding.category and cited & set(s.line_numbers)]
            assert risk_rank(finding.risk_level) >= max(floors, default=0), example.key


def test_evidence_is_the_incidents_lines_never_the_noise(batch):
    for example, rendered in batch:
        incident_lines = {n for truth in truths(rendered) for n in truth.lines}
        lines_of = rendered.parts[0].lines_of
        for finding in LLMAssessment.model_validate_json(example.assistant).findings:
            assert {n for ref in finding.evidence for n in lines_of[ref]} <= incident_lines, example.key
        noise = {i for i, line in enumerate(rendered.scenario.lines, 1) if isinstance(line, Noise)}
        assert not noise & incident_lines


def test_targets_name_only_what_the_prompt_shows_and_vary(batch):
    assert all(ungrounded_in(example) == 0 for example, _ in batch)
    anomalies = [f.anomaly for e, _ in batch for f in LLMAssessment.model_validate_json(e.assistant).findings]
    assert len(anomalies) > N * 0.3 and len(set(anomalies)) > len(anomalies) * 0.8  # not one fixed sentence


def test_all_scenarios_categories_and_formats_are_covered():
    seen = [example_at(f"1/train/{i}") for i in range(500)]
    formats = {r.window.format for _, r in seen}
    assert {"syslog", "access", "apache_error", "windows", "cloudtrail", "auditd"} <= formats
    assert {e.meta["category"] for e, _ in seen} >= {
        "benign", "brute_force", "reconnaissance", "web_attack", "privilege_escalation", "malware_execution",
        "account_persistence", "data_exfiltration", "system_failure", "policy_violation"}
    assert len({r.scenario.name.split("_")[0] for _, r in seen}) >= 8
    for name, generator in GENERATORS.items():  # every generator runs on several seeds
        for s in range(3):
            assert generator(random.Random(f"{name}{s}")).lines


@pytest.mark.parametrize("name", sorted(n for n in GENERATORS if n.startswith("benign")))
def test_benign_windows_fire_no_rule_and_have_no_findings(name):
    """Alarming-looking routine noise (PHP fatals, auditd execs, internal S3 reads, odd query values) must teach
    "nothing abnormal", which only holds when no rule fires on it."""
    for s in range(12):
        rng = random.Random(f"{name}/{s}")
        rendered = render(GENERATORS[name](rng))
        assert not rendered.signals, [sig.rule_id for sig in rendered.signals]
        assert all(answer(truths(rendered), part, [], rng).findings == [] for part in rendered.parts)


def test_incident_day_gives_a_finding_per_incident_riskiest_first():
    for s in range(12):
        rng = random.Random(f"day/{s}")
        scenario = cloud_incident_day(rng)
        rendered = render(scenario)
        targets = [answer(truths(rendered), part, rendered.signals, rng) for part in rendered.parts]
        found = [f for t in targets for f in t.findings]  # an incident's lines may be shown in a later prompt
        assert len(found) >= 2 and scenario.category in {f.category for f in found}
        for target in targets:
            ranks = [risk_rank(f.risk_level) for f in target.findings]
            assert len(ranks) <= 3 and ranks == sorted(ranks, reverse=True)
        assert max(risk_rank(f.risk_level) for f in found) >= risk_rank(scenario.risk)


@pytest.mark.parametrize(("name", "risk"), [("cloud_s3_exfil", "high"), ("cloud_internal_bulk_read", "medium")])
def test_bulk_s3_reads_are_raised_only_from_outside(name, risk):
    """Both fire the bulk-download rule (medium); a sync tool from an outside address is raised to high, a workload
    role's SDK reads from inside stay at the rule's medium."""
    for s in range(12):
        rng = random.Random(f"{name}/{s}")
        rendered = render(GENERATORS[name](rng))
        [finding] = answer(truths(rendered), rendered.parts[0], rendered.signals, rng).findings
        assert (finding.category, finding.risk_level) == ("data_exfiltration", risk)
        assert {sig.rule_id for sig in rendered.signals} == {"lw-aws-s3-bulk-download"}
        assert "top user_agent" in rendered.user  # the tool is visible to the model


def test_prompt_injection_does_not_change_the_answer():
    injected = [(e, r) for e, r in (example_at(f"2/train/{i}") for i in range(800)) if r.scenario.injected]
    assert injected, "the generator must produce injected windows"
    for example, rendered in injected:
        findings = json.loads(example.assistant)["findings"]
        assert findings and findings[0]["category"] == "web_attack"
        assert risk_rank(findings[0]["risk_level"]) >= risk_rank("medium")
        assert any(word in example.user for word in ("Ignore", "SYSTEM:", "IMPORTANT", "AI assistant", "instruction"))


def test_a_rule_of_the_findings_category_on_its_lines_sets_its_floor():
    part = DigestPart(text="x", refs=["L1", "L2"], lines_of={"L1": [1], "L2": [2]}, shown_lines=[1, 2])
    sig = Signal("r", "t", "high", "privilege_escalation", [], "s", [1])
    other = Signal("o", "t", "critical", "brute_force", [], "s", [1])
    [f] = answer([Truth({1, 2}, "privilege_escalation", "medium")], part, [sig, other], random.Random(0)).findings
    assert (f.risk_level, f.evidence) == ("high", ["L1", "L2"])  # the other category's critical rule does not count
    assert answer([Truth({5}, "brute_force", "high")], part, [], random.Random(0)).findings == []  # not shown here


def _sample_lines() -> set[str]:
    lines = set()
    for path in SAMPLES.iterdir():
        if path.name == "labels.jsonl" or not path.is_file():
            continue
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        lines |= {line[:200] for line in data.decode("utf-8", "replace").split("\n") if len(line) > 30}
    return lines


def test_no_sample_logs_line_or_address_leaks_into_training():
    sample = _sample_lines()
    for example in examples(300, seed=0, split="train"):
        exemplars = re.findall(r"^ L\d+(?: \(T\d+\))?: (.*)$", example.user, flags=re.M)
        assert not any(line[:200] in sample for line in exemplars if not line.endswith("…"))
        assert not re.search(r"\b(192\.0\.2|198\.51\.100|203\.0\.113)\.\d+", example.user + example.assistant)


def test_build_writes_split_files_and_manifest(tmp_path):
    manifest = build_dataset(tmp_path, n=30, seed=4, val_fraction=0.2)
    train = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    val = [json.loads(line) for line in (tmp_path / "val.jsonl").read_text().splitlines()]
    assert manifest["counts"] == {"train": len(train), "val": len(val)} and len(train) >= 24 and len(val) >= 1
    assert len({row["meta"]["window"] for row in train}) == 24 and manifest["dataset_version"] == DATASET_VERSION
    assert manifest["targets_ungrounded"] == 0
    assert set(train[0]) == {"system", "user", "assistant", "meta"}
    assert all(row["meta"]["key"].startswith("4/train/") for row in train)
    assert all(row["meta"]["key"].startswith("4/val/") for row in val)
    assert not {r["user"] for r in train} & {r["user"] for r in val}
    again = tmp_path / "again"
    build_dataset(again, n=30, seed=4, val_fraction=0.2)
    assert (again / "train.jsonl").read_bytes() == (tmp_path / "train.jsonl").read_bytes()


def test_dataset_build_cli(tmp_path):
    result = CliRunner().invoke(dataset, ["build", "--out", str(tmp_path), "--n", "12", "--seed", "3",
                                          "--token-counter", "approx", "--no-realdata"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "manifest.json").read_text())["seed"] == 3


def test_a_teacher_answer_is_kept_only_when_it_agrees_with_the_label():
    from logwarden.train.teacher import agrees_with_label

    example, _ = next((e, r) for e, r in (example_at(f"3/train/{i}") for i in range(60))
                      if json.loads(e.assistant)["findings"])
    target = LLMAssessment.model_validate_json(example.assistant)
    assert agrees_with_label(target, target, example.user)
    first = target.findings[0]
    other = "reconnaissance" if first.category != "reconnaissance" else "web_attack"
    relabelled = target.model_copy(update={"findings": [first.model_copy(update={"category": other})]})
    assert not agrees_with_label(relabelled, target, example.user)
    invented = target.model_copy(update={"recommendation": "Block 8.8.4.4 now."})
    assert not agrees_with_label(invented, target, example.user)
    assert not agrees_with_label(LLMAssessment(findings=[], recommendation="No action needed."), target, example.user)


def test_raw_http_attacks_are_pinned_to_the_lines_holding_the_payload():
    """The raw-request generator's evidence is the request line or body carrying the payload, never a header."""
    rng = random.Random(11)
    for _ in range(20):
        scenario = GENERATORS["raw_http_attack"](rng)
        [incident] = scenario.incidents()
        assert incident.lines and all(not line.split(":", 1)[0].istitle() or line.startswith(("GET ", "POST "))
                                      for line in incident.lines)
        rendered = render(scenario)
        events = rendered.window.events  # parsed as raw requests (a request line and body are access events)
        assert {e.format for e in events if e.raw.strip()} == {"access", "http_header"}
