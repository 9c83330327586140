"""Sigma metadata → logwarden's vocabulary: level → risk floor, tags → ATT&CK ids and category.

The category table (docs/FIELDS.md, "Sigma rules"): the first technique with a category of its own
wins (brute force, exploiting a public application, impairing defences…), else the first tactic
tag. It is the mapping the labelled data uses (/work/shared/realdata/SOURCES.md), so rules and
labels speak the same taxonomy. A rule may override it with the custom attribute
`logwarden: {category: …}`. Knows nothing about matching.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from logwarden.schemas import CATEGORIES

RISK_OF_LEVEL = {"informational": "info", "low": "low", "medium": "medium", "high": "high", "critical": "critical"}
LEVEL_ORDER = ("informational", "low", "medium", "high", "critical")
DEFAULT_CATEGORY = "policy_violation"  # a rule that names no tactic: something against policy

# technique (or its parent) → category; checked before tactics
TECHNIQUE_CATEGORY = {
    "T1110": "brute_force", "T1190": "web_attack",
    "T1562": "policy_violation", "T1070": "policy_violation", "T1112": "policy_violation",
    "T1222": "policy_violation", "T1078": "policy_violation",
}
TACTIC_CATEGORY = {
    "credential_access": "privilege_escalation",  # stolen credentials are elevated access
    "privilege_escalation": "privilege_escalation",
    "persistence": "account_persistence",
    "discovery": "reconnaissance", "reconnaissance": "reconnaissance", "resource_development": "reconnaissance",
    "execution": "malware_execution", "defense_evasion": "malware_execution",
    "lateral_movement": "malware_execution", "command_and_control": "malware_execution",
    "impact": "malware_execution",
    "collection": "data_exfiltration", "exfiltration": "data_exfiltration",
    "initial_access": "policy_violation",
}
_TECHNIQUE_TAG = re.compile(r"^attack\.(t\d{4}(?:\.\d{3})?)$", re.IGNORECASE)


def techniques_from_tags(tags: Sequence[str]) -> list[str]:
    """Sigma `attack.t1110.001` tags → `T1110.001` ids, in order, without duplicates."""
    found = [m.group(1).upper() for t in tags if (m := _TECHNIQUE_TAG.match(t))]
    return list(dict.fromkeys(found))


def category_from_tags(tags: Sequence[str]) -> str:
    for technique in techniques_from_tags(tags):
        category = TECHNIQUE_CATEGORY.get(technique.split(".")[0])
        if category:
            return category
    for tag in tags:
        namespace, _, name = tag.lower().partition(".")
        if namespace == "attack" and name.replace("-", "_") in TACTIC_CATEGORY:
            return TACTIC_CATEGORY[name.replace("-", "_")]
    return DEFAULT_CATEGORY


def rule_category(tags: Sequence[str], override: object) -> str:
    """The override when it is a known category, else the one the tags give."""
    if isinstance(override, str) and override in CATEGORIES:
        return override
    return category_from_tags(tags)


def risk_of(level: str | None) -> str:
    return RISK_OF_LEVEL.get((level or "").lower(), "low")
