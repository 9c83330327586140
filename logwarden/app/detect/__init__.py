"""Deterministic detectors: Sigma-flavoured YAML rules (`data/*.yaml`) run over parsed `Event`s.

`load_rules()` reads and validates the rules; `Detector().scan(events)` returns `Signal`s whose
level is the floor of a record's risk and whose category is its default. This package knows the
event field vocabulary (docs/FIELDS.md) but nothing about windows, prompts, the model or storage.
"""

from logwarden.app.detect.detector import Detector
from logwarden.app.detect.rules import Rule, RuleSpec, load_rules, shipped_rule_files, shipped_rules
from logwarden.app.detect.view import EventView, url_decode

__all__ = ["Detector", "EventView", "Rule", "RuleSpec", "load_rules", "shipped_rule_files", "shipped_rules",
           "url_decode"]
