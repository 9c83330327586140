"""Scoring the pipeline's records against labelled units of log lines (`logwarden eval`).

Owns: reading a labels file (JSONL of `{file, line_start, line_end, category, risk_min,
risk_max?}`, extra keys such as `techniques`/`note` ignored), and the pure scoring functions:
- an attack unit (category ≠ benign) is *detected* when some record overlapping its lines has a
  risk ≥ its `risk_min`; its category is *correct* when one of those detecting records carries
  the label's category, and *top-correct* when one of the detecting records at the unit's
  highest risk does (what an analyst sorting by risk sees first: a low-priority record of the
  right category beside a riskier wrong one does not count, nor does a window-wide record that
  merely happens to carry the right category next to a riskier precise one);
- a benign unit is a *false positive* when a record overlapping it has a risk above its
  `risk_max` (no `risk_max` = any record counts);
- a record overlaps a unit when one of its evidence line numbers lies in the unit (the span
  `line_start..line_end` when the record lists no evidence lines).
Scores are kept per file, per source (a file's top folder: `csic2010/…` → `csic2010`) and overall;
`filter_units` keeps the units of one side of a split (`data/realdata_split.json`). Besides the
scores, a run reports how faithful the model was (`ungrounded_rate`: entities its texts named
that its digest lacked) and how much of the rare lines it was shown (`rare_line_coverage`), from
the pipeline's metrics. Running the pipeline to get the records lives in `run_eval`; knows
nothing of the CLI, tables or the model's internals.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from logwarden.errors import InputError
from logwarden.schemas import Category, RiskLevel, risk_rank
from logwarden.schemas.record import RiskRecord


class LabelledUnit(BaseModel):
    """One labelled span of lines of one file; `file` is relative to the labels file's folder."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    file: str
    line_start: int
    line_end: int
    category: Category
    risk_min: RiskLevel
    risk_max: RiskLevel | None = None

    @property
    def is_attack(self) -> bool:
        return self.category != "benign"


@dataclass(frozen=True, slots=True)
class ScoredRecord:
    """The part of a `RiskRecord` scoring needs (so tests can hand-make them)."""

    source: str  # file name relative to the labels folder, as in `LabelledUnit.file`
    line_numbers: tuple[int, ...]
    category: str
    risk_level: str
    verdict: str | None = None  # the model's verdict on a baseline deviation (benign, suspicious, attack)
    verdict_category: str | None = None


@dataclass(slots=True)
class Scores:
    attacks: int = 0
    detected: int = 0
    category_correct: int = 0
    category_top_correct: int = 0
    benign: int = 0
    false_positives: int = 0

    @property
    def recall(self) -> float | None:
        return self.detected / self.attacks if self.attacks else None

    @property
    def fp_rate(self) -> float | None:
        return self.false_positives / self.benign if self.benign else None

    @property
    def category_accuracy(self) -> float | None:
        """Share of ALL attack units detected with the right category (a miss counts as wrong)."""
        return self.category_correct / self.attacks if self.attacks else None

    @property
    def category_top_accuracy(self) -> float | None:
        """Share of ALL attack units whose highest-risk detecting records include the right category."""
        return self.category_top_correct / self.attacks if self.attacks else None

    def add(self, other: Scores) -> None:
        for name in ("attacks", "detected", "category_correct", "category_top_correct", "benign", "false_positives"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict:
        return asdict(self) | {"recall": self.recall, "fp_rate": self.fp_rate,
                               "category_accuracy": self.category_accuracy,
                               "category_top_accuracy": self.category_top_accuracy}


@dataclass(slots=True)
class UnitResult:
    unit: LabelledUnit
    detected: bool = False
    category_correct: bool = False
    category_top_correct: bool = False
    false_positive: bool = False
    categories_seen: list[str] = field(default_factory=list)
    top_level: str | None = None  # the highest risk of the records touching the unit (None: none does)


@dataclass(slots=True)
class Report:
    overall: Scores
    per_file: dict[str, Scores]
    units: list[UnitResult]
    per_source: dict[str, Scores] = field(default_factory=dict)
    verdicts: dict = field(default_factory=dict)  # `verdict_scores`: empty when the model gave none

    def benign_flagged(self) -> dict[str, float]:
        """Share of benign units touched by a record at each level or above (`low` = at any level
        but info), whatever their `risk_max`: how often normal traffic is flagged at all."""
        benign = [u for u in self.units if not u.unit.is_attack]
        if not benign:
            return {}
        return {level: sum(1 for u in benign if u.top_level and risk_rank(u.top_level) >= risk_rank(level))
                / len(benign) for level in ("low", "medium", "high")}

    def as_dict(self) -> dict:
        return {"overall": self.overall.as_dict(), "benign_flagged": self.benign_flagged(), "verdicts": self.verdicts,
                "per_source": {name: s.as_dict() for name, s in self.per_source.items()},
                "per_file": {name: s.as_dict() for name, s in self.per_file.items()},
                "missed": [u.unit.model_dump() for u in self.units if u.unit.is_attack and not u.detected],
                "wrong_category": [u.unit.model_dump() | {"categories_seen": u.categories_seen,
                                                          "category_correct": u.category_correct}
                                   for u in self.units if u.detected and not u.category_top_correct],
                "false_positives": [u.unit.model_dump() | {"categories_seen": u.categories_seen}
                                    for u in self.units if u.false_positive]}


# ---- labels ------------------------------------------------------------------------------------

def load_labels(path: str | Path) -> list[LabelledUnit]:
    """Read a labels JSONL; a bad line → InputError naming the line and the problem."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"labels file {path} does not exist. Fix: pass --labels with a JSONL of "
                         f"{{file, line_start, line_end, category, risk_min, risk_max}} objects.")
    units = []
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            units.append(_parse_label(line, path, no))
    if not units:
        raise InputError(f"labels file {path} holds no labelled units. Fix: add one JSON object per line.")
    return units


def _parse_label(line: str, path: Path, no: int) -> LabelledUnit:
    try:
        unit = LabelledUnit.model_validate(json.loads(line))
    except (json.JSONDecodeError, ValidationError) as exc:
        raise InputError(f"{path}:{no}: not a valid labelled unit ({exc}). Fix: each line needs file, "
                         f"line_start, line_end, category (a schema category), risk_min (info..critical).") from None
    if unit.line_end < unit.line_start:
        raise InputError(f"{path}:{no}: line_end {unit.line_end} < line_start {unit.line_start}. Fix: swap them.")
    return unit


def filter_units(units: Sequence[LabelledUnit], sides: dict[str, str], side: str) -> list[LabelledUnit]:
    """The units whose file is on `side` of a split (`sides`: file → side); a file the split does not
    know is an error (the split was made from other labels)."""
    unknown = sorted({u.file for u in units} - set(sides))
    if unknown:
        raise InputError(f"the split does not know {len(unknown)} labelled file(s), e.g. {unknown[0]}. Fix: rebuild it "
                         f"with `logwarden dataset split` from these labels.")
    kept = [u for u in units if sides[u.file] == side]
    if not kept:
        raise InputError(f"no labelled unit lies on the {side!r} side of the split.")
    return kept


def source_of(file: str) -> str:
    """A file's source: its top folder (`csic2010/anomal.txt` → `csic2010`), or the file itself."""
    return file.split("/", 1)[0] if "/" in file else file


def labelled_files(units: Iterable[LabelledUnit], labels_dir: Path) -> list[Path]:
    """The files the units name, in first-seen order, resolved against the labels' folder."""
    seen: dict[str, Path] = {}
    for unit in units:
        seen.setdefault(unit.file, labels_dir / unit.file)
    missing = [str(p) for p in seen.values() if not p.exists()]
    if missing:
        raise InputError(f"labelled files not found: {', '.join(missing)}. Fix: keep `file` relative to the "
                         f"labels file's folder, or pass the files as PATH arguments.")
    return list(seen.values())


# ---- scoring (pure) ------------------------------------------------------------------------------

def overlaps(unit: LabelledUnit, record: ScoredRecord) -> bool:
    return record.source == unit.file and any(unit.line_start <= n <= unit.line_end for n in record.line_numbers)


def score_unit(unit: LabelledUnit, records: Sequence[ScoredRecord]) -> UnitResult:
    touching = [r for r in records if overlaps(unit, r)]
    result = UnitResult(unit, categories_seen=sorted({r.category for r in touching}),
                        top_level=max((r.risk_level for r in touching), key=risk_rank, default=None))
    if unit.is_attack:
        detecting = [r for r in touching if risk_rank(r.risk_level) >= risk_rank(unit.risk_min)]
        result.detected = bool(detecting)
        result.category_correct = any(r.category == unit.category for r in detecting)
        if detecting:
            top = max(risk_rank(r.risk_level) for r in detecting)
            result.category_top_correct = any(r.category == unit.category for r in detecting
                                              if risk_rank(r.risk_level) == top)
    else:
        ceiling = risk_rank(unit.risk_max) if unit.risk_max else -1
        result.false_positive = any(risk_rank(r.risk_level) > ceiling for r in touching)
    return result


def _unit_scores(result: UnitResult) -> Scores:
    if result.unit.is_attack:
        return Scores(attacks=1, detected=int(result.detected), category_correct=int(result.category_correct),
                      category_top_correct=int(result.category_top_correct))
    return Scores(benign=1, false_positives=int(result.false_positive))


def score(units: Sequence[LabelledUnit], records: Sequence[ScoredRecord]) -> Report:
    by_source: dict[str, list[ScoredRecord]] = {}
    for record in records:
        by_source.setdefault(record.source, []).append(record)
    overall, per_file, per_source, results = Scores(), {}, {}, []
    for unit in units:
        result = score_unit(unit, by_source.get(unit.file, []))
        results.append(result)
        scores = _unit_scores(result)
        overall.add(scores)
        per_file.setdefault(unit.file, Scores()).add(scores)
        per_source.setdefault(source_of(unit.file), Scores()).add(scores)
    return Report(overall=overall, per_file=per_file, units=results, per_source=per_source,
                  verdicts=verdict_scores(units, records))


def verdict_scores(units: Sequence[LabelledUnit], records: Sequence[ScoredRecord]) -> dict:
    """How right the model's verdicts on baseline deviations were against the labels: each judged
    record's truth is `attack` when a labelled attack unit holds one of its lines, `benign` when
    only benign units do (unlabelled lines: not counted). Dismissal precision: of the deviations
    judged benign, the share that were; attack precision likewise; category: of attacks judged
    attack, the share whose verdict named the label's category. {} when no record has a verdict."""
    judged = [r for r in records if r.verdict]
    if not judged:
        return {}
    unit_at: dict[tuple[str, int], LabelledUnit] = {}
    for unit in units:
        for n in range(unit.line_start, unit.line_end + 1):
            unit_at[(unit.file, n)] = unit
    table: dict[str, dict[str, int]] = {}
    category_right = attack_right = 0
    for record in judged:
        held = [u for n in record.line_numbers if (u := unit_at.get((record.source, n))) is not None]
        if not held:
            continue
        attack = next((u for u in held if u.is_attack), None)
        truth = "attack" if attack else "benign"
        row = table.setdefault(record.verdict, {"attack": 0, "benign": 0})
        row[truth] += 1
        if attack and record.verdict == "attack":
            attack_right += 1
            category_right += record.verdict_category == attack.category

    def precision(verdict: str, truth: str) -> float | None:
        row = table.get(verdict, {})
        total = sum(row.values())
        return row.get(truth, 0) / total if total else None

    attacks = sum(row["attack"] for row in table.values())
    benign = sum(row["benign"] for row in table.values())
    return {"table": table, "judged": sum(sum(r.values()) for r in table.values()),
            "dismissal_precision": precision("benign", "benign"), "attack_precision": precision("attack", "attack"),
            "attack_recall": table.get("attack", {}).get("attack", 0) / attacks if attacks else None,
            "benign_recall": table.get("benign", {}).get("benign", 0) / benign if benign else None,
            "attack_category_accuracy": category_right / attack_right if attack_right else None}


def scored_record(record: RiskRecord, labels_dir: Path) -> ScoredRecord:
    """A stored record, its source made relative to the labels folder so it matches `unit.file`."""
    lines = tuple(record.evidence.line_numbers) or tuple(range(record.line_start, record.line_end + 1))
    return ScoredRecord(source=_relative(record.source, labels_dir), line_numbers=lines,
                        category=record.category, risk_level=record.risk_level,
                        verdict=record.verdict.get("verdict"), verdict_category=record.verdict.get("category"))


def _relative(source: str, labels_dir: Path) -> str:
    try:
        return Path(source).resolve().relative_to(labels_dir.resolve()).as_posix()
    except ValueError:
        return source


# ---- a site's history, then a test ---------------------------------------------------------------

@dataclass(slots=True)
class HistoryScenario:
    """What a baseline learns first (`history`, never scored) and what is then analysed and scored."""

    history: list[Path]
    test: list[Path]
    units: list[LabelledUnit]  # the test files' units, relative to the scenario's folder
    folder: Path


def history_scenario(units: Sequence[LabelledUnit], labels_dir: Path, out: Path, *, share: float = 0.5,
                     seed: int = 7) -> HistoryScenario:
    """Each source (top folder) as a real site's log: the first `share` of its benign units (file
    order) become a history file, the baseline's past; the other benign units and every attack
    unit are interleaved in a seeded order into one test file. Units stay whole (a raw request's
    lines, an access line) and keep a blank line after them where they had one."""
    import random

    by_source: dict[str, list[LabelledUnit]] = {}
    for unit in units:
        by_source.setdefault(source_of(unit.file), []).append(unit)
    history, test, test_units = [], [], []
    for source, group in by_source.items():
        texts = {f: (labels_dir / f).read_bytes().split(b"\n") for f in {u.file for u in group}}
        benign = sorted((u for u in group if not u.is_attack), key=lambda u: (u.file, u.line_start))
        cut = int(len(benign) * share)
        rest = benign[cut:] + [u for u in group if u.is_attack]
        random.Random(seed).shuffle(rest)
        # one site: the history is the test file's rotated past (`x.log.1` is `x.log`'s), as a real site's would be
        name = f"{Path(source).stem}{Path(group[0].file).suffix or '.log'}"
        history.append(_write_units(out / source / "history" / f"{name}.1", benign[:cut], texts, []))
        test.append(_write_units(out / source / "test" / name, rest, texts, test_units, name=f"{source}/test/{name}"))
    return HistoryScenario(history=history, test=test, units=test_units, folder=out)


def _write_units(path: Path, units: Sequence[LabelledUnit], texts: dict[str, list[bytes]],
                 placed: list[LabelledUnit], name: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines: list[bytes] = []
    for unit in units:
        body = texts[unit.file][unit.line_start - 1: unit.line_end]
        if name is not None:
            placed.append(unit.model_copy(update={"file": name, "line_start": len(lines) + 1,
                                                  "line_end": len(lines) + len(body)}))
        lines += body
        after = texts[unit.file][unit.line_end] if unit.line_end < len(texts[unit.file]) else b"x"
        if not after.strip():
            lines.append(after)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


# ---- running the pipeline ------------------------------------------------------------------------

@dataclass(slots=True)
class EvalRun:
    name: str
    report: Report
    metrics: dict
    records: list = field(default_factory=list)  # the run's RiskRecords (for the detections summary)


def run_eval(units: Sequence[LabelledUnit], labels_dir: Path, paths: Sequence[Path], *, engine=None,
             name: str = "rules-only", options=None, history: Sequence[Path] = (), **overrides) -> EvalRun:
    """Analyse `paths` into a throw-away SQLite store and score the records it produced.
    `options`: the run options (`RunOptions.from_settings`; default: the declared defaults);
    `overrides` replace some of them (`llm_policy`, `max_prompts_per_window`, `sigma`, …);
    `history`: files the baseline learns from first (no records)."""
    from logwarden.app.pipeline import Pipeline
    from logwarden.app.run_options import RunOptions
    from logwarden.app.store import RecordFilter, open_store

    # Labelled files are complete (an unterminated last line is a line to score, not one to hold
    # back) and are scored by their paths (no node prefix).
    options = dataclasses.replace(options or RunOptions(), **{"llm_budget": "unlimited", **overrides},
                                  rules_only=engine is None, final=True, node=None)
    with tempfile.TemporaryDirectory(prefix="logwarden-eval-") as tmp:
        store = open_store(f"sqlite:///{tmp}/eval.db")
        try:
            if history and options.baseline != "off":
                from logwarden.app.baseline.learn import learn_paths

                learn_paths(store, history)
            pipeline = Pipeline(store, engine, options, command=f"eval {name}")
            metrics = pipeline.analyze(list(paths))
            records = store.query_records(RecordFilter(run_id=pipeline.run_id), limit=1_000_000)
        finally:
            store.close()
    scored = [scored_record(r, labels_dir) for r in records]
    return EvalRun(name=name, report=score(units, scored), metrics=metrics.as_dict(), records=records)
