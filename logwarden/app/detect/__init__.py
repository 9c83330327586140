"""Detection: Sigma rules (logwarden's own pack in `data/`, SigmaHQ and other packs) run over parsed
`Event`s, correlations included; pySigma parses, logwarden evaluates.

`ruleset_for(...)` loads the packs a run uses (shipped + installed + `LOGWARDEN_SIGMA_PATHS` +
`--sigma`) with the profile from the settings; `Detector(ruleset).scan(events)` returns `Signal`s
whose level is the floor of a record's risk and whose category is its default. This package knows
the event field vocabulary (docs/FIELDS.md) but nothing about windows, prompts, the model or storage.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

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
from logwarden.app.detect.view import EventView, url_decode

__all__ = ["CompiledRule", "Detector", "EventView", "Profile", "RuleSet", "describe_rules", "load_rules",
           "load_ruleset", "profile_from_settings", "ruleset_for", "shipped_ruleset", "url_decode"]


def profile_from_settings(settings) -> Profile:
    statuses = {"stable", "test"} | ({"experimental"} if settings.sigma_experimental else set())
    mute = {m.strip() for m in settings.sigma_mute.split(",") if m.strip()}
    return Profile(min_level=settings.sigma_min_level, statuses=frozenset(statuses), mute=frozenset(mute))


def ruleset_for(sigma_paths: Sequence[str | Path] = (), settings=None) -> RuleSet:
    """The rules of a run: shipped + installed packs + LOGWARDEN_SIGMA_PATHS + `sigma_paths`, the
    profile and placeholders from the settings, compiled packs cached under LOGWARDEN_HOME."""
    if settings is None:
        from logwarden.app.config import get_settings

        settings = get_settings()
    paths = default_pack_paths(sigma_paths, home=settings.home, settings_paths=settings.sigma_paths)
    return _cached_ruleset(tuple(str(p) for p in paths), profile_from_settings(settings),
                           str(settings.sigma_placeholders or ""), str(settings.home / "cache" / "sigma"),
                           tuple(str(p) for p in installed_packs(settings.home)))


@functools.lru_cache(maxsize=8)
def _cached_ruleset(paths: tuple[str, ...], profile: Profile, placeholders: str, cache_dir: str,
                    installed: tuple[str, ...] = ()) -> RuleSet:
    """An installed pack that cannot be read is reported and skipped (`optional`): a bad pack in
    LOGWARDEN_HOME must not stop every later run."""
    return load_ruleset(list(paths), profile=profile, placeholders=load_placeholders(placeholders or None),
                        cache_dir=Path(cache_dir), optional=installed)


def describe_rules(rule_ids: Sequence[str], ruleset: RuleSet | None = None) -> list[dict]:
    """What the record's detail view shows of the rules that fired: title, level, description,
    references and false positives (from the configured packs; an unknown id keeps only its id)."""
    rules = ruleset if ruleset is not None else ruleset_for()
    known = {r.id: r for r in rules.rules}
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
