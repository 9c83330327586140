"""A review item carries whole every rule group its answer's records depend on: the groups on the
lines its prompt shows, and those folded into them (their lines within a shown group's,
app/samelines.py), so the reviewed record is the stored one — same id, every rule — improved."""

from __future__ import annotations

from test_postprocess import BRUTE, PROV, window_of

from logwarden.app.digest import DigestPart
from logwarden.app.events import Signal
from logwarden.app.postprocess import assess_window
from logwarden.app.review import ReviewItem

BURST = Signal(rule_id="lw-ssh-bruteforce", title="SSH brute force", level="medium", category="brute_force",
               techniques=["T1110.001"], source="/var/log/auth.log", line_numbers=list(range(1, 9)), key="203.0.113.7")
LAST = Signal(rule_id="other-pack-root-guess", title="Root password guessed", level="high", category="policy_violation",
              techniques=[], source="/var/log/auth.log", line_numbers=[8], key="root")


def test_a_part_showing_only_the_bursts_head_brings_the_rule_folded_into_it():
    window, _ = window_of(BRUTE, [BURST, LAST])
    [stored] = assess_window(window, [BURST, LAST], None, PROV).records  # one record naming both rules
    head = DigestPart(text="L1 …", refs=["L1"], lines_of={"L1": [1, 2, 3]}, shown_lines=[1, 2, 3])
    item = ReviewItem.of(window, head, [BURST, LAST], [stored], run_id=None)
    assert {s.rule_id for s in item.signals} == {"lw-ssh-bruteforce", "other-pack-root-guess"}
    [again] = assess_window(item.window(), item.signals, None, PROV).records
    assert (again.id, again.detections, again.risk_level) == (stored.id, stored.detections, "high")
