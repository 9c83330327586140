"""Rule packs: find them, read them with pySigma, cache what was compiled, apply the profile.

A pack is a folder (read recursively), a zip, or one `.yml` file of Sigma rules. logwarden's own
pack ships in the package (`data/`) and always loads; packs installed with `logwarden rules
update` (under `LOGWARDEN_HOME/sigma/`), `LOGWARDEN_SIGMA_PATHS` and `--sigma PATH` load after it.
Reading 3,800 YAML files with pySigma takes half a minute, so each pack's translated rules
(`translate.RuleIR`) are cached under `LOGWARDEN_HOME/cache/sigma/`, keyed by the sha256 of every
file's content, the placeholder values, the IR version and pySigma's version: a warm load reads
one pickle and builds the matchers.

Nothing is dropped silently: every rule ends in the report (`RuleSet.report`, `logwarden rules
--json`) as `loaded`, `idle` (its logsource is one no logwarden parser produces), `filtered` (the
profile: below the minimum level, a status turned off, muted — with the reason) or `error` (not
loaded, with the reason: bad YAML, an unknown modifier, an undefined placeholder, a regex no
engine accepts, a correlation without its rules).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import pickle
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from logwarden.app.detect.compile import Atom, CompileError, Matcher, compile_condition, condition_fields, gate_clauses
from logwarden.app.detect.logsource import unroutable
from logwarden.app.detect.packfiles import load_yaml_documents, read_pack_files
from logwarden.app.detect.taxonomy import LEVEL_ORDER, risk_of, rule_category, techniques_from_tags
from logwarden.app.detect.translate import IR_VERSION, Placeholders, RuleIR
from logwarden.errors import ConfigError, InputError
from logwarden.schemas import CATEGORIES

log = logging.getLogger(__name__)

SHIPPED_PACK = "logwarden"
DEFAULT_KEY_FIELDS = ("src_ip", "host")
DEFAULT_MERGE_GAP_S = 3600.0
STATUSES = ("stable", "test", "experimental", "deprecated", "unsupported")


@dataclass(frozen=True, slots=True)
class Profile:
    """Which loaded rules run (Hayabusa-style): a minimum level, the statuses on, muted rule ids."""

    min_level: str = "low"
    statuses: frozenset[str] = frozenset(("stable", "test", "experimental"))
    mute: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.min_level not in LEVEL_ORDER:
            raise ConfigError(f"unknown minimum level {self.min_level!r}; use one of {', '.join(LEVEL_ORDER)}")

    def why_filtered(self, ir: RuleIR) -> str | None:
        if ir.rule_id in self.mute or ir.key in self.mute or (ir.name and ir.name in self.mute):
            return "muted by the profile"
        level = ir.level or "low"
        if level in LEVEL_ORDER and LEVEL_ORDER.index(level) < LEVEL_ORDER.index(self.min_level):
            return f"level {level} is below the profile's minimum ({self.min_level})"
        if ir.status and ir.status not in self.statuses:
            return f"status {ir.status} is turned off in the profile"
        return None

    def describe(self) -> dict:
        return {"min_level": self.min_level, "statuses": sorted(self.statuses), "mute": sorted(self.mute)}


@dataclass(eq=False, slots=True)
class CompiledRule:
    """A rule ready to run: its matcher (detections), gates, and what its signals say."""

    ir: RuleIR
    pack: str
    level: str  # logwarden risk level: info|low|medium|high|critical
    category: str
    techniques: list[str]
    key_fields: tuple[str, ...]
    merge_gap_s: float
    emits: bool = True  # makes signals itself (else it only feeds correlations)
    match: Matcher | None = None
    clauses: list[frozenset[Atom]] = field(default_factory=list)
    reads: tuple[str, ...] | None = None  # the fields its matcher reads (None: also the whole event)
    consumers: list[CompiledRule] = field(default_factory=list)  # correlations that reference it
    feeders: list[CompiledRule] = field(default_factory=list)  # the rules a correlation references

    @property
    def id(self) -> str:
        return self.ir.rule_id

    @property
    def key(self) -> str:
        return self.ir.key

    @property
    def title(self) -> str:
        return self.ir.title

    @property
    def description(self) -> str:
        return self.ir.description

    @property
    def correlation(self) -> dict | None:
        return self.ir.correlation

    @property
    def logsource(self) -> tuple[str | None, str | None, str | None]:
        return self.ir.logsource


@dataclass(slots=True)
class PackInfo:
    name: str
    path: str
    rules: int
    cached: bool
    load_s: float
    digest: str = ""  # of the pack's files as read (`pack_digest`)


@dataclass(slots=True)
class RuleSet:
    """The active rules of a run and the report on every rule that was read."""

    rules: list[CompiledRule]  # active: detections and correlations (emitting or feeding)
    report: list[dict] = field(default_factory=list)
    packs: list[PackInfo] = field(default_factory=list)
    profile: Profile = field(default_factory=Profile)
    dispatches: dict = field(default_factory=dict, repr=False)  # per logsource route, shared by its detectors

    def __iter__(self):
        """The rules that make signals (what an analyst sees behind records)."""
        return (r for r in self.rules if r.emits)

    def __len__(self) -> int:
        return sum(1 for r in self.rules if r.emits)

    @property
    def detections(self) -> list[CompiledRule]:
        return [r for r in self.rules if r.correlation is None]

    @property
    def correlations(self) -> list[CompiledRule]:
        return [r for r in self.rules if r.correlation is not None]

    def by_id(self, rule_id: str) -> CompiledRule:
        return next(r for r in self.rules if rule_id in (r.id, r.key))

    def fingerprint(self) -> str:
        """What a detector's saved state depends on: the packs as read and the profile, and each active
        correlation's spec (a rule set built from a plain list of rules has no packs). State saved under
        another fingerprint is not applied: a changed rule could mis-count it."""
        digest = hashlib.sha256(f"ir{IR_VERSION}|".encode())
        digest.update(json.dumps([[p.name, p.digest] for p in self.packs]).encode())
        digest.update(json.dumps(self.profile.describe(), sort_keys=True).encode())
        for rule in sorted(self.correlations, key=lambda r: r.key):
            digest.update(json.dumps([rule.key, rule.correlation], sort_keys=True, default=str).encode())
        return digest.hexdigest()


# --- reading packs ----------------------------------------------------------------------------


def shipped_pack_path() -> Path:
    return Path(str(resources.files("logwarden.app.detect") / "data"))


def pack_digest(files: Sequence[tuple[str, bytes]], placeholders: Placeholders, root: str) -> str:
    digest = hashlib.sha256(f"ir{IR_VERSION}|pysigma{_pysigma_version()}|".encode())
    digest.update(json.dumps({k: list(v) for k, v in sorted(placeholders.items())}).encode())
    for source, data in files:
        digest.update(source.removeprefix(root).encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()


def _pysigma_version() -> str:
    try:
        return metadata.version("pysigma")
    except metadata.PackageNotFoundError:  # pragma: no cover - pySigma is a dependency
        return "unknown"


def parse_pack(files: Sequence[tuple[str, bytes]], placeholders: Placeholders) -> list[RuleIR]:
    """pySigma reads every file (a broken file is reported, the others go on) → rule IR."""
    from sigma.collection import SigmaCollection
    from sigma.exceptions import SigmaError, SigmaRuleLocation

    collections, broken = [], []
    for source, data in files:
        try:
            documents = load_yaml_documents(data.decode("utf-8", "replace"))  # bounded: no billion laughs
            collections.append(SigmaCollection.from_dicts(
                documents, collect_errors=True, source=SigmaRuleLocation(source),
                collect_filters=True, resolve_references=False))
        except Exception as exc:  # YAML errors, a document that is not a mapping, …: this file only
            broken.append(_file_error(source, exc))
    merged = SigmaCollection.merge(collections, resolve_references=False)
    for rule in merged.rules:
        if hasattr(rule, "resolve_rule_references"):
            try:
                rule.resolve_rule_references(merged)
            except SigmaError as exc:
                rule.errors.append(exc)
    if merged.filters:
        merged.apply_filters(merged.filters)
    return broken + [_translated(rule, placeholders) for rule in merged.rules]


def _translated(rule: Any, placeholders: Placeholders) -> RuleIR:
    """One rule's IR; a rule whose fields are of the wrong types is that rule's error, not the pack's."""
    from logwarden.app.detect.translate import translate_rule

    source = _source_of(rule)
    try:
        return translate_rule(rule, source, placeholders)
    except Exception as exc:  # a hostile or broken rule: report it, load the others
        return _file_error(source, exc)


def _source_of(rule: Any) -> str:
    location = getattr(rule, "source", None)
    return str(getattr(location, "path", None) or location or "?")


def _file_error(source: str, exc: Exception) -> RuleIR:
    import yaml

    name = source.rsplit("/", 1)[-1]
    detail = " ".join(str(exc).split()) or type(exc).__name__
    what = "is not valid YAML" if isinstance(exc, yaml.YAMLError) else "is not a Sigma rule file"
    return RuleIR(key=f"file:{source}", rule_id=name, title=name, source=source, error=f"{name} {what}: {detail}")


def _refused_file(source: str, why: str) -> RuleIR:
    name = source.rsplit("/", 1)[-1]
    return RuleIR(key=f"file:{source}", rule_id=name, title=name, source=source, error=f"{name} {why}")


def _refused_pack(path: Path, why: str) -> RuleIR:
    return RuleIR(key=f"pack:{path}", rule_id=_pack_name(path), title=f"pack {_pack_name(path)}", source=str(path),
                  error=f"the pack was not loaded: {why}")


def load_pack(path: Path, *, placeholders: Placeholders, cache_dir: Path | None) -> tuple[list[RuleIR], PackInfo]:
    started = time.perf_counter()
    found = read_pack_files(path)
    files = found.files
    digest = pack_digest(files, placeholders, str(path))
    cache_file = cache_dir / f"{_pack_name(path)}-{digest[:24]}.pickle" if cache_dir else None
    irs = _read_cache(cache_file)
    cached = irs is not None
    if irs is None:
        irs = parse_pack(files, placeholders)
        _write_cache(cache_file, irs)
    irs = [_refused_file(source, why) for source, why in found.refused] + irs
    info = PackInfo(name=_pack_name(path), path=str(path), rules=len(irs), cached=cached,
                    load_s=time.perf_counter() - started, digest=digest)
    return irs, info


def _pack_name(path: Path) -> str:
    return SHIPPED_PACK if path == shipped_pack_path() else (path.stem or path.name).replace(" ", "_")


def _read_cache(cache_file: Path | None) -> list[RuleIR] | None:
    if cache_file is None or not cache_file.is_file():
        return None
    try:
        with cache_file.open("rb") as f:
            data = pickle.load(f)
        return data if isinstance(data, list) and all(isinstance(r, RuleIR) for r in data) else None
    except Exception:  # a stale or torn cache is rebuilt, never trusted
        log.info("ignoring unreadable rule cache %s", cache_file)
        return None


def _write_cache(cache_file: Path | None, irs: list[RuleIR]) -> None:
    if cache_file is None:
        return
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=cache_file.parent, delete=False, suffix=".tmp") as f:
            pickle.dump(irs, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(f.name, cache_file)
    except OSError as exc:  # a read-only home still runs, just cold every time
        log.warning("cannot write the rule cache %s: %s", cache_file, exc)


# --- building the rule set ----------------------------------------------------------------------


def build_ruleset(packs: Sequence[tuple[str, list[RuleIR]]], profile: Profile) -> RuleSet:
    """Compile every rule, resolve correlations, apply the profile; report each rule's fate."""
    report: list[dict] = []
    compiled: dict[str, CompiledRule] = {}
    entries: dict[str, dict] = {}
    for pack, irs in packs:
        for ir in irs:
            entry = _report_entry(ir, pack)
            report.append(entry)
            if ir.error is None and ir.key in compiled:
                ir = _with_error(ir, f"duplicates rule {ir.key} of pack {compiled[ir.key].pack}")
            if ir.error is not None:
                entry.update(state="error", reason=ir.error)
                continue
            try:
                compiled[ir.key] = _compile(ir, pack)
                entries[ir.key] = entry
            except (CompileError, ValueError) as exc:
                entry.update(state="error", reason=str(exc))
    active = _activate(compiled, profile, entries)
    return RuleSet(rules=active, report=report, profile=profile)


def _with_error(ir: RuleIR, error: str) -> RuleIR:
    ir = pickle.loads(pickle.dumps(ir))  # the cached IR stays as it was
    ir.error = error
    return ir


def _report_entry(ir: RuleIR, pack: str) -> dict:
    product, category, service = ir.logsource
    return {"id": ir.rule_id, "key": ir.key, "title": ir.title, "pack": pack, "source": ir.source,
            "level": ir.level, "status": ir.status, "logsource": {"product": product, "category": category,
                                                                  "service": service},
            "correlation": ir.correlation["type"] if ir.correlation else None,
            "techniques": techniques_from_tags(ir.tags), "state": "loaded", "reason": None}


def _compile(ir: RuleIR, pack: str) -> CompiledRule:
    custom = ir.custom
    if "category" in custom and custom["category"] not in CATEGORIES:
        raise CompileError(f"category {custom['category']!r} is not one of {', '.join(CATEGORIES)}")
    keys = custom.get("key")
    key_fields = tuple([keys] if isinstance(keys, str) else keys or DEFAULT_KEY_FIELDS)
    rule = CompiledRule(ir=ir, pack=pack, level=risk_of(ir.level), category=rule_category(ir.tags, custom.get("category")),
                        techniques=techniques_from_tags(ir.tags), key_fields=key_fields,
                        merge_gap_s=float(custom.get("merge_gap_s", DEFAULT_MERGE_GAP_S)))
    if ir.condition is not None:
        rule.match = compile_condition(ir.condition)
        rule.clauses = gate_clauses(ir.condition)
        rule.reads = condition_fields(ir.condition)
    return rule


def _activate(compiled: Mapping[str, CompiledRule], profile: Profile, entries: dict[str, dict]) -> list[CompiledRule]:
    """Profile-passing rules that emit, plus every rule an active correlation needs."""
    wanted: dict[str, CompiledRule] = {}

    def need(rule: CompiledRule, chain: tuple[str, ...]) -> bool:
        if rule.key in chain:
            entries[rule.key].update(state="error", reason="the correlation references itself")
            return False
        for ref in (rule.correlation or {}).get("rules", ()):
            target = compiled.get(ref)
            if target is None:
                entries[rule.key].update(state="error", reason=f"references rule {ref}, which did not load")
                return False
            if not need(target, chain + (rule.key,)):
                return False
        wanted[rule.key] = rule
        return True

    for rule in compiled.values():
        entry = entries[rule.key]
        reason = profile.why_filtered(rule.ir)
        rule.emits = rule.ir.output and reason is None
        if reason is not None and rule.ir.output:
            entry.update(state="filtered", reason=reason)
        elif rule.ir.output:
            if need(rule, ()):
                idle = unroutable(*rule.logsource) if rule.correlation is None else None
                if idle:
                    entry.update(state="idle", reason=idle)
        else:
            entry["reason"] = "feeds a correlation (Sigma generate: false)"
    for rule in wanted.values():
        rule.consumers = []
    for rule in wanted.values():
        rule.feeders = [wanted[ref] for ref in (rule.correlation or {}).get("rules", ())]
        for feeder in rule.feeders:
            feeder.consumers.append(rule)
    for key, entry in entries.items():
        if entry["state"] == "loaded" and key not in wanted:
            entry.update(state="filtered", reason=entry["reason"] or "not used by any active rule")
    return list(wanted.values())


# --- the default rule set -------------------------------------------------------------------------


def installed_packs(home: Path | None) -> list[Path]:
    """The packs `logwarden rules update` installed under `home/sigma` (not its staging folders)."""
    folder = home / "sigma" if home else None
    if folder is None or not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir()
                  if not p.name.startswith(".") and (p.is_dir() or p.suffix.lower() == ".zip"))


def default_pack_paths(extra: Iterable[str | Path] = (), *, home: Path | None = None,
                       settings_paths: str = "") -> list[Path]:
    """The shipped pack, installed packs, LOGWARDEN_SIGMA_PATHS, then `extra` (--sigma)."""
    paths = [shipped_pack_path(), *installed_packs(home)]
    paths += [Path(p).expanduser() for p in settings_paths.split(os.pathsep) if p.strip()]
    paths += [Path(p).expanduser() for p in extra]
    unique: list[Path] = []
    for p in paths:
        if p.resolve() not in {u.resolve() for u in unique}:
            unique.append(p)
    return unique


def load_placeholders(path: str | Path | None) -> dict[str, list[str]]:
    """Placeholder values for `|expand` rules: a YAML/JSON map of name → value or list of values."""
    if not path:
        return {}
    import yaml

    try:
        data = yaml.safe_load(Path(path).expanduser().read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read the Sigma placeholder file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"the Sigma placeholder file {path} must map names to values")
    return {str(k).strip("%"): [str(v) for v in (vals if isinstance(vals, list) else [vals])] for k, vals in data.items()}


def load_ruleset(paths: Sequence[str | Path], *, profile: Profile | None = None,
                 placeholders: Placeholders | None = None, cache_dir: Path | None = None,
                 optional: Sequence[str | Path] = ()) -> RuleSet:
    """Read, compile and profile the packs at `paths` (in order) into one rule set. A pack in
    `optional` (an installed one) that cannot be read is reported and left out: one bad pack must
    not stop every run; any other raises `InputError`."""
    placeholders = placeholders or {}
    packs, infos = [], []
    skippable = {str(p) for p in optional}
    for path in paths:
        try:
            irs, info = load_pack(Path(path), placeholders=placeholders, cache_dir=cache_dir)
        except InputError as exc:
            if str(path) not in skippable:
                raise
            log.warning("rule pack %s not loaded: %s", path, exc)
            irs, info = [_refused_pack(Path(path), str(exc))], PackInfo(_pack_name(Path(path)), str(path), 0, False, 0.0)
        packs.append((info.name, irs))
        infos.append(info)
    ruleset = build_ruleset(packs, profile or Profile())
    ruleset.packs = infos
    return ruleset


def load_rules(paths: Sequence[str | Path] | None = None, *, profile: Profile | None = None) -> RuleSet:
    """The rules in these packs (default: logwarden's shipped pack), with no disk cache."""
    return load_ruleset([shipped_pack_path()] if paths is None else list(paths), profile=profile)


@functools.lru_cache(maxsize=1)
def shipped_ruleset() -> RuleSet:
    """logwarden's own pack, read and compiled once per process (rules are stateless: every
    `Detector` keeps its own state), for callers that build many detectors."""
    return load_rules()
