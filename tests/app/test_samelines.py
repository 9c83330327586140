"""Records of one window on the same lines fold into one (app/samelines.py): the widest holds the
narrower ones under its id whatever their order, the riskiest names the category, every rule is
named; a burst's record and the model's own findings are never folded away."""

from __future__ import annotations

from _store_helpers import make_record

from logwarden.app.samelines import merge_same_lines
from logwarden.schemas.record import Evidence, Technique


def record(rid: str, lines: range, *, level: str = "medium", category: str = "brute_force", rule: str = "r",
           decided_by: str = "rules", **more):
    return make_record(id=rid, line_start=lines[0], line_end=lines[-1], line_count=len(lines), risk_level=level,
                       category=category, detections=[rule], decided_by=decided_by, anomaly=f"{rule} fired",
                       evidence=Evidence(line_numbers=list(lines)), **more)


def test_the_widest_record_holds_the_others_under_its_id_in_any_order():
    wide = record("b-wide", range(10, 20), rule="lw-burst")
    narrow = record("a-narrow", range(12, 13), level="critical", category="account_persistence", rule="sigma-x",
                    techniques=[Technique(id="T1136.001")])
    same = record("c-same", range(10, 20), level="low", category="reconnaissance", rule="lw-scan")
    for order in ([wide, narrow, same], [same, narrow, wide], [narrow, same, wide]):
        [merged] = merge_same_lines(order)
        assert merged.id == "b-wide" and merged.evidence.line_numbers == list(range(10, 20))
        assert merged.detections == ["lw-burst", "lw-scan", "sigma-x"]
        assert (merged.risk_level, merged.risk_score, merged.category) == ("critical", 95, "account_persistence")
        assert merged.anomaly.startswith("sigma-x fired; ") and "T1136.001" in {t.id for t in merged.techniques}


def test_a_tie_in_level_is_named_by_the_most_precise_record():
    window_wide = record("a", range(10, 30), level="low", category="reconnaissance")
    one_line = record("b", range(14, 15), level="low", category="web_attack")
    [merged] = merge_same_lines([window_wide, one_line])
    assert (merged.id, merged.category) == ("a", "web_attack")


def test_overlapping_lines_a_burst_and_the_models_own_finding_stay_records_of_their_own():
    first = record("a", range(10, 20))
    overlapping = record("b", range(15, 25))
    burst = record("c", range(12, 14), rule="lw-count")
    finding = record("d", range(11, 12), decided_by="llm", category="reconnaissance")
    kept = merge_same_lines([first, overlapping, burst, finding], bursts={"c"})
    assert [r.id for r in kept] == ["a", "b", "c", "d"] and kept[0].detections == ["r"]
