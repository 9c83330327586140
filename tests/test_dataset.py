"""The training-set generator: deterministic, rendered through the real pipeline stages, targets
that validate and agree with the rule floor, varied phrasing, prompt injections ignored, a
seed-split train/val, and no sample_logs evaluation line leaking into training prompts."""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from logwarden.app.commands.dataset import dataset
from logwarden.app.models import Signal
from logwarden.prompts import FENCE, system_prompt
from logwarden.schemas import LLMAssessment, risk_rank
from logwarden.train.dataset import agree_with_rules, build_dataset, example_at, examples, render, target
from logwarden.train.scenarios import GENERATORS, cloud_incident_day

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
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
        assert "rules fired:" in example.user and "exemplar lines:" in example.user


def test_targets_validate_and_respect_the_rule_floor(batch):
    for example, rendered in batch:
        answer = LLMAssessment.model_validate_json(example.assistant)
        if rendered.signals:
            floor = max(risk_rank(s.level) for s in rendered.signals)
            assert risk_rank(answer.risk_level) >= floor, example.key
            assert answer.category in {s.category for s in rendered.signals}, example.key


def test_targets_are_written_from_the_window(batch):
    for example, rendered in batch:
        answer = LLMAssessment.model_validate_json(example.assistant)
        for ip in {str(e.fields["src_ip"]) for e in rendered.window.events if e.fields.get("src_ip")}:
            if ip in answer.trace:
                assert ip in example.user or ip in "\n".join(e.raw for e in rendered.window.events)
        assert f"lines {rendered.window.line_start}-{rendered.window.line_end}" in answer.trace
    anomalies = {LLMAssessment.model_validate_json(e.assistant).anomaly for e, _ in batch}
    assert len(anomalies) > N * 0.8  # not one fixed sentence


def test_all_scenarios_categories_and_formats_are_covered():
    seen = [example_at(f"1/train/{i}") for i in range(500)]
    formats = {r.window.format for _, r in seen}
    assert {"syslog", "access", "apache_error", "windows", "cloudtrail", "auditd"} <= formats
    assert {json.loads(e.assistant)["category"] for e, _ in seen} >= {
        "benign", "brute_force", "reconnaissance", "web_attack", "privilege_escalation", "malware_execution",
        "account_persistence", "data_exfiltration", "system_failure", "policy_violation"}
    assert len({r.scenario.name.split("_")[0] for _, r in seen}) >= 8
    for name, generator in GENERATORS.items():  # every generator runs on several seeds
        for s in range(3):
            assert generator(random.Random(f"{name}{s}")).lines


@pytest.mark.parametrize("name", sorted(n for n in GENERATORS if n.startswith("benign")))
def test_benign_windows_fire_no_rule_and_stay_benign(name):
    """Alarming-looking routine noise (PHP fatals, auditd execs, internal S3 reads) must teach "benign", which only holds
    when no rule fires on it: a fired rule would turn the target into that rule's category."""
    for s in range(12):
        rng = random.Random(f"{name}/{s}")
        rendered = render(GENERATORS[name](rng))
        assert not rendered.signals, [sig.rule_id for sig in rendered.signals]
        assert target(rendered, rng).category == "benign"


def test_incident_day_answers_for_the_riskiest_incident_and_names_the_others():
    for s in range(12):
        rng = random.Random(f"day/{s}")
        scenario = cloud_incident_day(rng)
        answer = target(render(scenario), rng)
        assert answer.category == scenario.category and risk_rank(answer.risk_level) >= risk_rank(scenario.risk)
        assert "also in this window" in scenario.what
        risks = [risk for _, risk in scenario.facts["incidents"]]
        assert len(risks) >= 2 and scenario.risk == max(risks, key=risk_rank)


@pytest.mark.parametrize(("name", "risk"), [("cloud_s3_exfil", "high"), ("cloud_internal_bulk_read", "medium")])
def test_bulk_s3_reads_are_raised_only_from_outside(name, risk):
    """Both fire the bulk-download rule (medium); a sync tool from an outside address is raised to high, a workload
    role's SDK reads from inside stay at the rule's medium."""
    for s in range(12):
        rng = random.Random(f"{name}/{s}")
        rendered = render(GENERATORS[name](rng))
        answer = target(rendered, rng)
        assert (answer.category, answer.risk_level) == ("data_exfiltration", risk)
        assert {sig.rule_id for sig in rendered.signals} == {"lw-aws-s3-bulk-download"}
        assert "top user_agent:" in rendered.user  # the tool is visible to the model


def test_prompt_injection_does_not_change_the_answer():
    injected = [(e, r) for e, r in (example_at(f"2/train/{i}") for i in range(800)) if r.scenario.injected]
    assert injected, "the generator must produce injected windows"
    for example, rendered in injected:
        answer = json.loads(example.assistant)
        assert answer["category"] == "web_attack" and risk_rank(answer["risk_level"]) >= risk_rank("medium")
        assert any(word in example.user for word in ("Ignore", "SYSTEM:", "IMPORTANT", "AI assistant", "instruction"))


def test_agree_with_rules_raises_to_the_floor_and_takes_a_rule_category():
    sig = Signal("r", "t", "high", "privilege_escalation", [], "s", [1])
    assert agree_with_rules("benign", "info", [sig]) == ("privilege_escalation", "high")
    assert agree_with_rules("privilege_escalation", "critical", [sig]) == ("privilege_escalation", "critical")
    assert agree_with_rules("benign", "info", []) == ("benign", "info")


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
        exemplars = re.findall(r"^ L\d+: (.*)$", example.user, flags=re.M)
        assert not any(line[:200] in sample for line in exemplars if not line.endswith("…"))
        assert not re.search(r"\b(192\.0\.2|198\.51\.100|203\.0\.113)\.\d+", example.user + example.assistant)


def test_build_writes_split_files_and_manifest(tmp_path):
    manifest = build_dataset(tmp_path, n=30, seed=4, val_fraction=0.2)
    train = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    val = [json.loads(line) for line in (tmp_path / "val.jsonl").read_text().splitlines()]
    assert manifest["counts"] == {"train": 24, "val": len(val)} and 1 <= len(val) <= 6
    assert set(train[0]) == {"system", "user", "assistant", "meta"}
    assert all(row["meta"]["key"].startswith("4/train/") for row in train)
    assert all(row["meta"]["key"].startswith("4/val/") for row in val)
    assert not {r["user"] for r in train} & {r["user"] for r in val}
    again = tmp_path / "again"
    build_dataset(again, n=30, seed=4, val_fraction=0.2)
    assert (again / "train.jsonl").read_bytes() == (tmp_path / "train.jsonl").read_bytes()


def test_dataset_build_cli(tmp_path):
    result = CliRunner().invoke(dataset, ["build", "--out", str(tmp_path), "--n", "12", "--seed", "3",
                                          "--token-counter", "approx"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "manifest.json").read_text())["seed"] == 3
