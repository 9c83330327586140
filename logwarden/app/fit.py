"""Does a model's answer fit the lines it judged: the check after the grammar.

Owns two rules a small model breaks (issue 45: the 0.5B called all 10 real lines it triaged
`web_attack`, an sshd failure included): a finding's category must be one its lines can be
(`digest.categories_for`, the same list the grammar offers where the backend takes one), and each
of its techniques must be in the shipped ATT&CK table under a tactic its category can show. A
finding of a category its lines cannot be is set aside, a technique that does not fit is left out;
each is said in a note, so a verdict with nothing left is "benign, the model was unsure", never
the model's word. Triage (`triage.py`) and analyze's review (`review.py`) fit every answer.
Knows nothing of prompts, terminals or the store.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from logwarden.app import attack
from logwarden.app.postprocess import LLMResult
from logwarden.schemas.assessment import Finding

# The ATT&CK tactics a technique of each category may sit under. Wide on purpose: what it stops is
# a technique of another kind of event (T1190 on a kernel crash, T1110 on a data transfer).
CATEGORY_TACTICS: dict[str, frozenset[str]] = {
    "brute_force": frozenset(("Credential Access",)),
    "reconnaissance": frozenset(("Reconnaissance", "Discovery")),
    "web_attack": frozenset(("Initial Access", "Execution", "Persistence", "Reconnaissance", "Discovery",
                             "Credential Access", "Collection")),
    "privilege_escalation": frozenset(("Privilege Escalation", "Defense Evasion", "Credential Access",
                                       "Persistence")),
    "malware_execution": frozenset(("Execution", "Persistence", "Defense Evasion", "Command and Control", "Impact",
                                    "Privilege Escalation", "Lateral Movement", "Discovery", "Resource Development")),
    "account_persistence": frozenset(("Persistence", "Privilege Escalation", "Defense Evasion", "Initial Access")),
    "data_exfiltration": frozenset(("Exfiltration", "Collection", "Command and Control")),
    "system_failure": frozenset(("Impact",)),
    "policy_violation": frozenset(("Defense Evasion", "Persistence", "Initial Access", "Privilege Escalation",
                                   "Credential Access", "Impact")),
}


# Techniques a category takes beyond its tactics: a guess that succeeded is a valid account (T1078
# sits under Initial Access, where T1190 sits too, which no brute force is).
CATEGORY_TECHNIQUES: dict[str, frozenset[str]] = {"brute_force": frozenset(("T1078",))}


@dataclass(slots=True)
class Fitted:
    """An answer with what does not fit its lines taken out, and a note for each thing taken out."""

    result: LLMResult
    unsure: list[str] = field(default_factory=list)
    set_aside: int = 0  # findings of a category their lines cannot be


def technique_fits(category: str, technique_id: str) -> bool:
    """Known to the shipped table, under a tactic `category` can show (or one it takes by name)."""
    tactics = set(attack.tactics(technique_id))
    named = attack.normalize_id(technique_id).split(".")[0] in CATEGORY_TECHNIQUES.get(category, frozenset())
    return bool(tactics) and (named or bool(tactics & CATEGORY_TACTICS.get(category, frozenset())))


def fit(result: LLMResult, categories: Sequence[str] | None) -> Fitted:
    """`result` with its findings of a category outside `categories` (None: any) set aside and the
    techniques that do not fit their finding's category left out."""
    if result.assessment is None:
        return Fitted(result)
    kept: list[Finding] = []
    unsure: list[str] = []
    for finding in result.assessment.findings:
        about = ", ".join(finding.evidence)
        if categories is not None and finding.category not in categories:
            unsure.append(f"it called {about} {finding.category}, which these lines cannot be: set aside")
            continue
        fitting = [t for t in finding.techniques if technique_fits(finding.category, t)]
        unfit = [t for t in finding.techniques if t not in fitting]
        if unfit:
            unsure.append(f"{', '.join(unfit)} {'does' if len(unfit) == 1 else 'do'} not fit {finding.category} "
                          f"(not in the ATT&CK table, or of another tactic): left out")
        kept.append(finding.model_copy(update={"techniques": fitting}))
    assessment = result.assessment.model_copy(update={"findings": kept})
    return Fitted(dataclasses.replace(result, assessment=assessment), unsure,
                  len(result.assessment.findings) - len(kept))
