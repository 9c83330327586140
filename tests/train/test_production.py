"""Dataset 6's prompts in production's shape (`train/production.py`): what `analyze` queues after a
baseline learned a history, and the target of each — a labelled attack a finding pinned to its lines,
a deviation with no attack label the dismissal (no findings, a reason), a rule on a shown line its
finding at its floor — every target grounded."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

from logwarden.app.digest import DigestPart
from logwarden.app.events import Signal
from logwarden.app.grounding import ground
from logwarden.engine.api import approx_tokens
from logwarden.prompts import PROMPT_VERSION
from logwarden.schemas import LLMAssessment
from logwarden.train.dataset import build_dataset
from logwarden.train.production import (
    DISMISSAL,
    FileLabels,
    RichUnit,
    ScenarioJudge,
    collect_items,
    item_answer,
    label_truths,
    scenario_examples,
)

PAGES = ("/", "/products", "/cart", "/about", "/contact")


def _line(n: int, ip: str, path: str) -> str:
    return f'{ip} - - [01/Mar/2026:10:{n // 60 % 60:02d}:{n % 60:02d} +0000] "GET {path} HTTP/1.1" 200 512 "-" "Mozilla/5.0"'


def _site(tmp: Path, *, attack_line: bool = True) -> tuple[list[Path], Path, int, int]:
    """A shop's history (many clients, numeric item ids), then a test file with one tampered request (unless
    not `attack_line`: a parameter the endpoint never takes, which no signature names, so only the baseline
    sees it) and one plain but new value among ordinary requests; returns the files and the two lines."""
    history = [_line(i, f"10.0.{i % 50}.{i % 200 + 1}", f"/item.php?id={i % 97}") for i in range(600)]
    history += [_line(i, f"10.1.{i % 40}.{i % 100 + 1}", PAGES[i % len(PAGES)]) for i in range(300)]
    (tmp / "history").mkdir()
    (tmp / "history" / "access.log.1").write_text("\n".join(history) + "\n")
    test = [_line(i, f"10.0.{i % 50}.{i % 200 + 1}", f"/item.php?id={i % 97}") for i in range(40)]
    attack, plain = 18, 31
    if attack_line:
        test[attack - 1] = _line(attack, "172.16.9.9", "/item.php?id=42&debug=1")
    test[plain - 1] = _line(plain, "10.0.3.4", "/item.php?id=blue%20shoes")
    (tmp / "test").mkdir()
    (tmp / "test" / "access.log").write_text("\n".join(test) + "\n")
    return [tmp / "history" / "access.log.1"], tmp / "test" / "access.log", attack, plain


def _unit(line: int, category: str = "benign", risk: str = "info") -> RichUnit:
    return RichUnit(file="access.log", line_start=line, line_end=line, category=category, risk_min=risk,
                    source_label="attack_type=sqli" if category != "benign" else None)


def test_the_pipeline_queues_deviations_with_their_baseline_context(tmp_path):
    history, test, attack, plain = _site(tmp_path)
    items = collect_items([test], history, approx_tokens)
    shown = {n for item in items for n in item.part.shown_lines}
    assert attack in shown
    for item in items:
        assert "unlike this source's learned baseline:" in item.part.text
        assert item.part.prompt.startswith("Untrusted log digest")
        assert any(s.rule_id.startswith("lw-baseline-") for s in item.signals)


def test_an_attack_label_becomes_a_finding_pinned_to_its_lines(tmp_path):
    history, test, attack, plain = _site(tmp_path)
    items = [i for i in collect_items([test], history, approx_tokens) if attack in i.part.shown_lines]
    labels = FileLabels([_unit(n) for n in range(1, 41) if n != attack] + [_unit(attack, "web_attack", "medium")])
    item = items[0]
    target = item_answer(item, label_truths(item, labels), random.Random(0))
    assert len(target.findings) == 1
    finding = target.findings[0]
    assert finding.category == "web_attack" and finding.risk_level in ("medium", "high", "critical")
    assert {n for ref in finding.evidence for n in item.part.lines_of[ref]} == {attack}
    assert not ground(finding.anomaly, item.part.text).ungrounded


def test_a_deviation_with_no_attack_label_becomes_a_dismissal(tmp_path):
    history, test, attack, plain = _site(tmp_path, attack_line=False)
    items = collect_items([test], history, approx_tokens)
    labels = FileLabels([_unit(n) for n in range(1, 41)])  # nothing here is an attack
    assert [i.part.shown_lines for i in items] == [[plain]]
    for item in items:
        target = item_answer(item, label_truths(item, labels), random.Random(0))
        assert target.findings == []
        assert target.recommendation == DISMISSAL["web-value"]
        assert not ground(target.recommendation, item.part.text).ungrounded


def _part(lines: list[int]) -> DigestPart:
    text = "source: x\nrules fired: Brute force [high, brute_force, T1110] ×1 on L5–L5\nlines:\n" + \
        "\n".join(f" L{n}: sshd[1]: Failed password for root from 10.9.9.9 port 22" for n in lines)
    return DigestPart(text=text, refs=[f"L{n}" for n in lines], lines_of={f"L{n}": [n] for n in lines},
                      shown_lines=lines)


def test_a_rule_on_a_shown_line_keeps_its_finding_at_its_floor_and_a_summary_row_alone_pins_nothing():
    rule = Signal("lw-ssh-bruteforce", "Brute force", "high", "brute_force", ["T1110"], "x", [5, 6, 7])
    deviation = Signal("lw-baseline-template", "Log message of a kind this source has never written", "low",
                       "reconnaissance", [], "x", [9])
    shown = SimpleNamespace(part=_part([5, 9]), signals=[rule, deviation], span=(1, 10))
    target = item_answer(shown, [], random.Random(0))
    assert [(f.category, f.risk_level, f.evidence) for f in target.findings] == [("brute_force", "high", ["L5"])]
    hidden = SimpleNamespace(part=_part([9]), signals=[rule, deviation], span=(1, 10))  # the rule is a summary row
    target = item_answer(hidden, [], random.Random(0))
    assert target.findings == [] and target.recommendation == DISMISSAL["template"]


def test_generated_windows_in_production_shape_build_a_v3_dataset(tmp_path):
    judge = ScenarioJudge(tmp_path / "judge", approx_tokens, seed=7, history=400)
    try:
        def generated(n, split):
            return scenario_examples(judge, n, seed=7, split=split)

        manifest = build_dataset(tmp_path / "ds", n=60, seed=7, generated=generated)
    finally:
        judge.close()
    assert manifest["prompt_version"] == PROMPT_VERSION == "analyze_v4"
    assert manifest["targets_ungrounded"] == 0 and manifest["counts"]["train"] > 0
    rows = (tmp_path / "ds" / "train.jsonl").read_text().splitlines()
    import json

    for row in map(json.loads, rows):
        LLMAssessment.model_validate_json(row["assistant"])
        assert "unlike this source's learned baseline:" in row["user"]
