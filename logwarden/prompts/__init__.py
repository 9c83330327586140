"""Versioned prompts. The system prefix is fixed per version (the engine KV-caches it); the user
part fences the window digest as untrusted data. Bump the version when either changes: it is
part of every record id. `analyze_v1.txt` (one anomaly/trace/recommendation answer, record
schema 1) stays for reading old records; `analyze_v2` asks for evidence-pinned findings;
`analyze_v3` adds the learned baseline's deviations (judge each: a finding, or ordinary variety)
and rules as summary rows."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

PROMPT_VERSION = "analyze_v3"
FENCE = "<<<LOG_DIGEST"
FENCE_END = "LOG_DIGEST>>>"
USER_LEAD = f"Untrusted log digest between the markers:\n{FENCE}\n"  # how every user prompt starts


@lru_cache(maxsize=None)
def system_prompt(version: str = PROMPT_VERSION) -> str:
    return resources.files(__package__).joinpath(f"{version}.txt").read_text(encoding="utf-8").strip()


def _defang(text: str) -> str:
    """Log text must not be able to close the fence it sits in."""
    return text.replace(FENCE_END, "LOG_DIGEST>>(escaped)").replace(FENCE, "<<(escaped)LOG_DIGEST")


def user_prompt(digest_text: str) -> str:
    return f"{USER_LEAD}{_defang(digest_text)}\n{FENCE_END}\nJSON:"


def triage_prompt(snippet: str) -> str:
    return f"Untrusted log snippet between the markers:\n{FENCE}\n{_defang(snippet)}\n{FENCE_END}\nJSON:"
