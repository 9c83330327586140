"""`app/evaluate.py` scoring on hand-made units and records with known answers, label loading
errors, and `logwarden eval --rules-only` end to end on a small labelled sshd log."""

from __future__ import annotations

import json

import pytest
from _repo import REPO
from click.testing import CliRunner

from logwarden.app.evaluate import LabelledUnit, ScoredRecord, load_labels, score, score_unit
from logwarden.cli.commands.eval import eval_command
from logwarden.errors import InputError


def unit(start, end, category="brute_force", risk_min="medium", risk_max=None, file="auth.log"):
    return LabelledUnit(file=file, line_start=start, line_end=end, category=category, risk_min=risk_min,
                        risk_max=risk_max)


def rec(lines, category="brute_force", level="medium", source="auth.log"):
    return ScoredRecord(source=source, line_numbers=tuple(lines), category=category, risk_level=level)


def test_attack_detected_only_at_or_above_risk_min():
    assert score_unit(unit(10, 20, risk_min="high"), [rec([12], level="medium")]).detected is False
    assert score_unit(unit(10, 20, risk_min="high"), [rec([12], level="high")]).detected is True
    assert score_unit(unit(10, 20, risk_min="high"), [rec([12], level="critical")]).detected is True


def test_overlap_uses_evidence_lines_and_source():
    assert score_unit(unit(10, 20), [rec([9, 21])]).detected is False  # spans around, touches nothing
    assert score_unit(unit(10, 20), [rec([20])]).detected is True
    assert score_unit(unit(10, 20), [rec([15], source="secure")]).detected is False


def test_category_correct_needs_a_detecting_record_of_that_category():
    low_right = rec([11], category="brute_force", level="low")
    high_wrong = rec([12], category="web_attack", level="high")
    result = score_unit(unit(10, 20), [low_right, high_wrong])
    assert result.detected and not result.category_correct
    assert score_unit(unit(10, 20), [high_wrong, rec([13], level="medium")]).category_correct


def test_top_category_counts_only_the_records_at_the_units_highest_risk():
    medium_right = rec([11], category="brute_force", level="medium")
    high_wrong = rec([12], category="web_attack", level="high")
    result = score_unit(unit(10, 20), [medium_right, high_wrong])
    assert result.category_correct and not result.category_top_correct  # the riskier record is wrong
    tie = score_unit(unit(10, 20), [rec([11], level="high"), high_wrong])
    assert tie.category_top_correct  # the right category is among the top-risk records
    assert not score_unit(unit(10, 20, risk_min="high"), [medium_right]).category_top_correct  # undetected
    report = score([unit(10, 20), unit(30, 40)], [medium_right, high_wrong, rec([35], level="critical")])
    assert (report.overall.category_correct, report.overall.category_top_correct) == (2, 1)
    assert report.overall.category_top_accuracy == pytest.approx(1 / 2)
    assert [u["line_start"] for u in report.as_dict()["wrong_category"]] == [10]


def test_benign_false_positive_only_above_risk_max():
    benign = unit(1, 9, category="benign", risk_min="info", risk_max="low")
    assert score_unit(benign, [rec([3], level="low")]).false_positive is False
    assert score_unit(benign, [rec([3], level="medium")]).false_positive is True
    no_ceiling = unit(1, 9, category="benign", risk_min="info")
    assert score_unit(no_ceiling, [rec([3], level="info")]).false_positive is True


def test_score_aggregates_per_file_and_overall():
    units = [unit(1, 9, "benign", "info", "low"), unit(10, 20), unit(21, 30, "privilege_escalation"),
             unit(1, 5, "web_attack", "high", file="access.log"), unit(6, 50, "benign", "info", "low", file="access.log")]
    records = [rec([3], level="high"), rec([15]), rec([25], category="brute_force"),
               rec([2], "web_attack", "critical", "access.log")]
    report = score(units, records)
    auth, access = report.per_file["auth.log"], report.per_file["access.log"]
    assert (auth.attacks, auth.detected, auth.category_correct, auth.benign, auth.false_positives) == (2, 2, 1, 1, 1)
    assert (access.attacks, access.detected, access.category_correct, access.false_positives) == (1, 1, 1, 0)
    assert report.overall.recall == 1.0
    assert report.overall.category_accuracy == pytest.approx(2 / 3)
    assert report.overall.fp_rate == pytest.approx(1 / 2)
    assert [u["line_start"] for u in report.as_dict()["false_positives"]] == [1]


def test_empty_scores_are_none_not_zero():
    report = score([unit(1, 2, "benign", "info", "low")], [])
    assert report.overall.recall is None and report.overall.fp_rate == 0.0


def test_load_labels_errors_say_where(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps({"file": "a.log", "line_start": 1, "line_end": 2, "category": "nope",
                                "risk_min": "low"}) + "\n")
    with pytest.raises(InputError, match="labels.jsonl:1"):
        load_labels(path)
    with pytest.raises(InputError, match="does not exist"):
        load_labels(tmp_path / "missing.jsonl")


def test_sample_labels_load_as_is():
    from pathlib import Path

    units = load_labels(REPO / "sample_logs" / "labels.jsonl")
    assert any(u.is_attack for u in units) and any(not u.is_attack for u in units)


SSHD = "Mar 11 02:{m:02d}:{s:02d} web-01 sshd[{pid}]: Failed password for root from 203.0.113.45 port {port} ssh2"
CRON = "Mar 11 03:{m:02d}:00 web-01 CRON[{pid}]: pam_unix(cron:session): session opened for user root by (uid=0)"


def test_eval_cli_rules_only_json(tmp_path):
    lines = [CRON.format(m=i, pid=900 + i) for i in range(5)]
    lines = [SSHD.format(m=14, s=i, pid=2000 + i, port=40000 + i) for i in range(20)] + lines
    (tmp_path / "auth.log").write_text("\n".join(lines) + "\n")
    labels = [{"file": "auth.log", "line_start": 1, "line_end": 20, "category": "brute_force", "risk_min": "medium"},
              {"file": "auth.log", "line_start": 21, "line_end": 25, "category": "benign", "risk_min": "info",
               "risk_max": "low"}]
    (tmp_path / "labels.jsonl").write_text("\n".join(map(json.dumps, labels)) + "\n")
    result = CliRunner().invoke(eval_command, ["--labels", str(tmp_path / "labels.jsonl"), "--rules-only", "--json"])
    assert result.exit_code == 0, result.output
    overall = json.loads(result.stdout)["rules-only"]["overall"]
    assert (overall["attacks"], overall["detected"], overall["category_correct"]) == (1, 1, 1)
    assert (overall["benign"], overall["false_positives"]) == (1, 0)
    table = CliRunner().invoke(eval_command, ["--labels", str(tmp_path / "labels.jsonl"), "--rules-only"])
    assert table.exit_code == 0, table.output
    assert "rules-only: detections per level" in table.stderr  # what was found before how well (issue 31)
    assert "lw-ssh" in table.stderr and "first event" in table.stderr


def test_eval_history_share_learns_history_first_and_scores_the_rest(tmp_path):
    """A site's past and its present: half the benign requests are history (learned, never scored),
    the rest and the attacks interleave; renamed parameters are found against the learned baseline,
    and the report says how often normal requests were flagged at all."""
    import random

    rng = random.Random(3)
    stamp = "10/Mar/2024:06:55:46 +0000"
    lines, labels = [], []
    for i in range(400):
        attack = i % 10 == 9
        name = f"qty{'ABCDEFG'[i % 7]}" if attack else "qty"  # renamed, a few clients per new name
        lines.append(f'10.{i // 200}.{i % 200}.1 - - [{stamp}] "GET /shop/item.php?id={rng.randint(1, 99)}&{name}=2 '
                     f'HTTP/1.1" 200 512 "-" "Mozilla/5.0"')
        labels.append({"file": "shop/access.log", "line_start": i + 1, "line_end": i + 1,
                       "category": "web_attack" if attack else "benign", "risk_min": "low" if attack else "info",
                       **({} if attack else {"risk_max": "low"})})
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "access.log").write_text("\n".join(lines) + "\n")
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(u) + "\n" for u in labels))
    result = CliRunner().invoke(eval_command, ["--labels", str(tmp_path / "labels.jsonl"), "--rules-only",
                                               "--history-share", "0.5", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)["rules-only"]
    overall = report["overall"]
    assert overall["attacks"] == 40 and overall["benign"] == 180  # 180 of the 360 benign units were history
    assert overall["detected"] >= 36
    assert report["benign_flagged"]["low"] <= 0.02 and report["benign_flagged"]["medium"] == 0
    off = CliRunner().invoke(eval_command, ["--labels", str(tmp_path / "labels.jsonl"), "--rules-only",
                                            "--history-share", "0.5", "--baseline", "off", "--json"])
    assert json.loads(off.stdout)["rules-only"]["overall"]["detected"] == 0  # the rules know nothing of qtyA


def test_the_models_verdicts_are_scored_against_the_labels():
    from logwarden.app.evaluate import LabelledUnit, ScoredRecord, score

    units = [LabelledUnit(file="a.log", line_start=1, line_end=5, category="benign", risk_min="info", risk_max="low"),
             LabelledUnit(file="a.log", line_start=6, line_end=9, category="web_attack", risk_min="medium")]

    def judged(lines, verdict, category="benign"):
        return ScoredRecord("a.log", tuple(lines), "web_attack", "low", verdict=verdict, verdict_category=category)

    records = [judged([1], "benign"), judged([2], "benign"), judged([7], "benign"),  # one attack dismissed
               judged([8], "attack", "web_attack"), judged([3], "attack", "web_attack"),
               judged([9], "attack", "reconnaissance"), judged([40], "attack"),  # line 40: no label, not counted
               ScoredRecord("a.log", (4,), "web_attack", "low")]  # no verdict: a rule's record
    v = score(units, records).verdicts
    assert v["table"] == {"benign": {"benign": 2, "attack": 1}, "attack": {"benign": 1, "attack": 2}}
    assert v["judged"] == 6 and v["dismissal_precision"] == 2 / 3 and v["attack_precision"] == 2 / 3
    assert v["attack_category_accuracy"] == 1 / 2
    assert score(units, records[-1:]).verdicts == {}
