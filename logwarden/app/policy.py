"""The LLM policy: which windows need the model's judgement, and the prompts each one gets.

deviations (the default): windows holding a baseline deviation no rule explains, shown as the
deviations' own lines; signals: those and windows where a rule fired; suspicious: those and quiet
windows with alarming words or in a deterministic 1-in-`SAMPLE_EVERY` sample; all: every window —
the last three show rare lines too, in at most `max_parts` prompts.

Owns: the policies, the choice, and the counters of it in the run's metrics (windows skipped, rare
lines seen and shown, windows split). Knows nothing of the store, the review queue or the engine
beyond its token counter.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from logwarden.app.baseline.deviation import RULE_PREFIX as BASELINE_RULES
from logwarden.app.digest import DigestPart, build_digest
from logwarden.app.events import Signal
from logwarden.app.metrics import RunMetrics
from logwarden.app.mine import SourceMiner, Window

# Words that make a window without any rule hit still worth the model's time ("suspicious" policy).
SUSPICIOUS_WORDS = ("fail", "denied", "invalid", "error", "refused", "unauthori", "forbidden", "attack",
                    "panic", "segfault", "killed", "illegal", "violation", "warning", "critical", "alert",
                    "root", "sudo", "admin", "password", "exploit", "malware", "powershell", "cmd.exe")
LLM_POLICIES = ("deviations", "signals", "suspicious", "all")
DEFAULT_LLM_POLICY = LLM_POLICIES[0]
SAMPLE_EVERY = 20  # "suspicious" policy: also ~1 in 20 quiet windows (deterministic by source and line)


def unexplained(signals: Sequence[Signal]) -> list[Signal]:
    """The rules' signals and the baseline deviations no rule explains (none of their lines is a rule's):
    a request a rule already named SQL injection needs no judgement of its renamed parameter too."""
    ruled = {n for s in signals if not s.rule_id.startswith(BASELINE_RULES) for n in s.line_numbers}
    return [s for s in signals if not s.rule_id.startswith(BASELINE_RULES) or ruled.isdisjoint(s.line_numbers)]


def prompts_for(window: Window, signals: Sequence[Signal], miner: SourceMiner, *, policy: str, token_budget: int,
                max_parts: int | None, count_tokens: Callable[[str], int],
                metrics: RunMetrics) -> list[DigestPart] | None:
    """The window's prompts under `policy`; None when the model need not read it. Every deviation
    is shown (deviations), else at most `max_parts` prompts (None: as many as its rare lines need)."""
    focus = policy == "deviations"
    shown = unexplained(signals) if focus else signals
    if focus and not any(s.rule_id.startswith(BASELINE_RULES) for s in shown):
        metrics.windows_skipped_by_policy += 1
        return None
    digest = build_digest(window, miner.templates(window.cluster_ids), shown, focus=focus)
    metrics.rare_lines += len(digest.rare)
    if not focus and not _wants_llm(window, signals, digest.render(), policy):
        metrics.windows_skipped_by_policy += 1
        return None
    parts = digest.parts(token_budget, count_tokens, max_parts=None if focus else max_parts)
    shown_lines = {n for part in parts for n in part.shown_lines}
    metrics.rare_lines_llm += len(digest.rare)
    metrics.rare_lines_shown += sum(n in shown_lines for n in digest.rare)
    metrics.windows_split += len(parts) > 1
    return parts


def _wants_llm(window: Window, signals: Sequence[Signal], digest_text: str, policy: str) -> bool:
    if policy == "all" or signals:
        return True
    if policy == "suspicious":
        lowered = digest_text.lower()
        return any(word in lowered for word in SUSPICIOUS_WORDS) or \
            stable_sample(f"{window.source}:{window.line_start}", SAMPLE_EVERY)
    return False


def stable_sample(key: str, every: int) -> bool:
    """Deterministic 1-in-`every` choice by key (same decision on every re-run)."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % every == 0
