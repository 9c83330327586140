"""Detection: Sigma rules (logwarden's own pack in `data/`, SigmaHQ and other packs) run over parsed
`Event`s, correlations included; pySigma parses, logwarden evaluates.

`RuleSources.from_settings(...)` names the packs a run uses (shipped + installed +
`LOGWARDEN_SIGMA_PATHS` + `--sigma`) with the profile from the settings, `load_sources` loads them;
`Detector(ruleset).scan(events)` returns `Signal`s whose level is the floor of a record's risk and whose category is its default. This package knows
the event field vocabulary (docs/FIELDS.md) but nothing about windows, prompts, the model or storage.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from logwarden.app.config import Settings
from logwarden.app.detect.detector import Detector
from logwarden.app.detect.pack import (
    CompiledRule,
    Profile,
    RuleSet,
    default_pack_paths,
    installed_packs,
    load_placeholders,
    load_rules,
    load_ruleset,
    shipped_ruleset,
)
from logwarden.app.detect.view import EventView

__all__ = ["CompiledRule", "Detector", "EventView", "Profile", "RuleSet", "RuleSources", "describe_rules", "load_rules", "load_sources",
           "load_ruleset", "profile_from_settings", "ruleset_for", "shipped_ruleset"]


def profile_from_settings(settings: Settings) -> Profile:
    statuses = {"stable", "test"} | ({"experimental"} if settings.sigma_experimental else set())
    mute = {m.strip() for m in settings.sigma_mute.split(",") if m.strip()}
    return Profile(min_level=settings.sigma_min_level, statuses=frozenset(statuses), mute=frozenset(mute))


@dataclass(frozen=True, slots=True)
class RuleSources:
    """Where a run's rules come from, resolved from the settings once (at the command's edge):
    the packs in order, the profile, the placeholder file, the compiled-pack cache."""

    paths: tuple[str, ...]
    profile: Profile
    placeholders: str = ""
    cache_dir: str = ""
    installed: tuple[str, ...] = ()  # packs under LOGWARDEN_HOME: one that cannot be read is skipped

    @classmethod
    def from_settings(cls, settings: Settings, sigma_paths: Sequence[str | Path] = ()) -> RuleSources:
        """Shipped + installed packs + LOGWARDEN_SIGMA_PATHS + `sigma_paths` (--sigma)."""
        paths = default_pack_paths(sigma_paths, home=settings.home, settings_paths=settings.sigma_paths)
        return cls(tuple(str(p) for p in paths), profile_from_settings(settings), str(settings.sigma_placeholders or ""),
                   str(settings.home / "cache" / "sigma"), tuple(str(p) for p in installed_packs(settings.home)))

    def describe(self) -> dict:
        return {"packs": list(self.paths), "profile": self.profile.describe()}


def ruleset_for(sigma_paths: Sequence[str | Path], settings: Settings) -> RuleSet:
    """The rules of a run as the settings configure them, plus `sigma_paths` (--sigma)."""
    return load_sources(RuleSources.from_settings(settings, sigma_paths))


def load_sources(sources: RuleSources | None) -> RuleSet:
    """The rules these sources name, compiled packs cached (None: logwarden's shipped pack)."""
    if sources is None:
        return shipped_ruleset()
    return _cached_ruleset(sources.paths, sources.profile, sources.placeholders, sources.cache_dir, sources.installed)


@functools.lru_cache(maxsize=8)
def _cached_ruleset(paths: tuple[str, ...], profile: Profile, placeholders: str, cache_dir: str,
                    installed: tuple[str, ...] = ()) -> RuleSet:
    """An installed pack that cannot be read is reported and skipped (`optional`): a bad pack in
    LOGWARDEN_HOME must not stop every later run."""
    return load_ruleset(list(paths), profile=profile, placeholders=load_placeholders(placeholders or None),
                        cache_dir=Path(cache_dir), optional=installed)


def describe_rules(rule_ids: Sequence[str], ruleset: RuleSet) -> list[dict]:
    """What the record's detail view shows of the rules that fired: title, level, description,
    references and false positives (from the run's packs; an unknown id keeps only its id)."""
    known = {r.id: r for r in ruleset.rules}
    out = []
    for rule_id in rule_ids:
        rule = known.get(rule_id)
        if rule is None:
            out.append({"id": rule_id, "title": rule_id, "level": None, "description": "", "references": [],
                        "falsepositives": [], "pack": None})
            continue
        out.append({"id": rule_id, "title": rule.title, "level": rule.level, "description": rule.description,
                    "references": list(rule.ir.references), "falsepositives": list(rule.ir.falsepositives),
                    "pack": rule.pack})
    return out
