"""How incidents are grouped and told (`IncidentOptions`, from the settings): what a run's options
carry into the regrouping and the story phase. Imports nothing of the store, so that a run's
options (app/run_options.py) cost no SQLAlchemy where nothing is stored (`triage --no-store`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from logwarden.app.config import Settings, declared
from logwarden.app.incidents.grouping import GroupingPolicy
from logwarden.app.incidents.pivots import PIVOT_KINDS
from logwarden.errors import ConfigError


@dataclass(frozen=True, slots=True)
class IncidentOptions:
    policy: GroupingPolicy = field(default_factory=GroupingPolicy)
    min_risk: str = declared("incident_min_risk")
    stories: int = declared("incident_stories")
    story_tokens: int = declared("incident_story_max_new_tokens")  # a story's answer at most

    @classmethod
    def from_settings(cls, settings: Settings) -> IncidentOptions:
        kinds = frozenset(k.strip() for k in settings.incident_pivots.split(",") if k.strip())
        unknown = kinds - set(PIVOT_KINDS)
        if unknown:
            raise ConfigError(f"LOGWARDEN_INCIDENT_PIVOTS: unknown pivot(s) {', '.join(sorted(unknown))}; "
                              f"use some of {', '.join(PIVOT_KINDS)}.")
        policy = GroupingPolicy(gap_s=settings.incident_gap_s, weak_gap_s=settings.incident_weak_gap_s,
                                pivots=kinds, max_fanout=settings.incident_max_fanout,
                                max_pivot_hosts=settings.incident_max_pivot_hosts)
        return cls(policy=policy, min_risk=settings.incident_min_risk, stories=settings.incident_stories,
                   story_tokens=settings.incident_story_max_new_tokens)

    def describe(self) -> dict:
        """JSON for a run's config."""
        policy = self.policy
        return {"gap_s": policy.gap_s, "weak_gap_s": policy.weak_gap_s, "pivots": sorted(policy.pivots),
                "max_fanout": policy.max_fanout, "max_pivot_hosts": policy.max_pivot_hosts,
                "min_risk": self.min_risk, "stories": self.stories, "story_tokens": self.story_tokens}
