"""Training prompts in production's shape (`analyze_v4`): what `analyze` queues for the model, with targets.

Owns: running labelled files through the `Pipeline` itself — a baseline learned first from a
history (`evaluate.history_scenario`: a site with a past, as `logwarden eval --history-share`
scores it), the default LLM policy (`deviations`: only windows holding a baseline deviation,
shown as the deviations' own lines with their baseline context, one summary row per fired rule)
— and keeping the review items it queues instead of answering them (`collect_items`); then the
target answer of each item (`item_answer`):
- a labelled attack whose lines the prompt shows → a finding pinned to those lines (`targets.answer`,
  risk at least the label's `risk_min` and the rules' floor on its lines);
- a rule that fired on lines the prompt shows, where no label explains them → the rule's finding
  at its floor (the model never rates a rule's lines below it);
- deviations and nothing else → the dismissal the v3 schema allows: no findings, and a
  recommendation that says why the lines are ordinary (`dismissal`): `postprocess` keeps such a
  deviation at `info` with that reason.
The same path serves generated scenario windows (`scenario_items`): a scenario's benign lines are
its source's history, the whole scenario is then analysed. Knows nothing of training or the engine.
"""

from __future__ import annotations

import random
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from logwarden.app.baseline.deviation import RULE_PREFIX as BASELINE_RULES
from logwarden.app.evaluate import LabelledUnit
from logwarden.app.events import Signal
from logwarden.app.review import ReviewItem
from logwarden.engine.api import CountTokens
from logwarden.schemas import LLMAssessment
from logwarden.train.targets import Truth, answer

WHOLE_UNIT_LINES = 20  # a unit this long or longer is a recording-level label ("this file is the attack")
ATTACK_TYPES = {"sqli": "SQL injection in a request parameter", "xss": "Cross-site scripting in a request parameter",
                "path-traversal": "Path traversal in a request parameter",
                "cmdi": "Command injection in a request parameter"}
# Why a deviation is ordinary, per kind (lw-baseline-<kind>): no entity named, so every reason is grounded.
DISMISSAL = {
    "web-endpoint": "A page of this site asked for in a plain request, no attack in it: ordinary variety. No action needed.",
    "web-param": "Plain parameter names and values, no injected syntax: ordinary variety of this endpoint. No action needed.",
    "web-value": "A new but plain value (ordinary text, no injected syntax): ordinary variety. No action needed.",
    "template": "A routine message of a new kind for this program, nothing hostile in it: ordinary variety. No action needed.",
    "entity": "Routine first-seen activity (a plain job, service or logon), nothing hostile in it. No action needed.",
}
DISMISSAL_ANY = "The deviations are ordinary variety: plain new values and pages, nothing hostile. No action needed."


class RichUnit(LabelledUnit):
    """A labelled unit with what realdata's labels add (the technique, the attack type)."""

    technique: str | None = None
    source_label: str | None = None

    @property
    def attack_type(self) -> str | None:
        import re

        match = re.search(r"attack_type=([\w-]+)", self.source_label or "")
        return match.group(1) if match else None


# ---- the pipeline, its review items kept ----------------------------------------------------------

def collect_items(paths: Sequence[Path], history: Sequence[Path], count_tokens: CountTokens, *,
                  llm_policy: str = "deviations", max_prompts_per_window: int | None = None) -> list[ReviewItem]:
    """The review items `analyze` queues for `paths` after its baseline learned `history`, in queue order."""
    import dataclasses

    from logwarden.app.baseline.learn import learn_paths
    from logwarden.app.pipeline import Pipeline
    from logwarden.app.run_options import RunOptions
    from logwarden.app.store import open_store
    from logwarden.train.replay import RecordingEngine

    class Collecting(Pipeline):
        items: list[ReviewItem] = []

        def review(self, items=None) -> None:  # keep the queue, answer nothing
            self._commit()
            self.items = [ReviewItem.from_json(i) for i in self.store.pending_reviews(run_id=self.run_id)]

    options = dataclasses.replace(RunOptions(), llm_policy=llm_policy, max_prompts_per_window=max_prompts_per_window,
                                  llm_budget="unlimited", final=True, node=None)
    with tempfile.TemporaryDirectory(prefix="logwarden-dataset-") as tmp:
        store = open_store(f"sqlite:///{tmp}/dataset.db")
        try:
            if history:
                learn_paths(store, list(history))
            pipeline = Collecting(store, RecordingEngine(count_tokens), options, command="dataset")
            pipeline.analyze(list(paths))
            return pipeline.items
        finally:
            store.close()


# ---- targets ---------------------------------------------------------------------------------------

class FileLabels:
    """The units of one file, found by line."""

    def __init__(self, units: Sequence[RichUnit]):
        self.units = sorted(units, key=lambda u: u.line_start)

    def attacks_in(self, start: int, end: int) -> list[RichUnit]:
        return [u for u in self.units if u.is_attack and u.line_start <= end and u.line_end >= start]


def _shown(item: ReviewItem) -> set[int]:
    return {n for numbers in item.part.lines_of.values() for n in numbers}


def label_truths(item: ReviewItem, labels: FileLabels) -> list[Truth] | None:
    """The labelled incidents of this item's window, as lines of its file; None when the labels
    cannot say which shown lines are the attack (a recording-level attack in a later prompt)."""
    start, end = item.span
    attacks = labels.attacks_in(start, end)
    whole = [u for u in attacks if u.line_end - u.line_start + 1 >= WHOLE_UNIT_LINES]
    out: list[Truth] = []
    if whole:
        if item.part.index != 1:
            return None
        unit = whole[0]
        lines = sorted(n for n in item.part.shown_lines if unit.line_start <= n <= unit.line_end)[:8]
        if lines:
            out.append(Truth(lines=set(lines), category=unit.category, risk=unit.risk_min,
                             techniques=[unit.technique] if unit.technique else []))
    by_kind: dict[tuple, set[int]] = defaultdict(set)
    for unit in attacks:
        if unit in whole:
            continue
        by_kind[(unit.category, unit.risk_min, unit.technique, unit.attack_type)] |= \
            set(range(max(unit.line_start, start), min(unit.line_end, end) + 1))
    out += [Truth(lines=lines, category=category, risk=risk, techniques=[technique] if technique else [],
                  phrase=ATTACK_TYPES.get(kind or ""))
            for (category, risk, technique, kind), lines in by_kind.items()]
    return out


def rule_truths(item: ReviewItem, truths: Sequence[Truth]) -> list[Truth]:
    """Rules that fired on lines this prompt shows which no labelled incident explains: the rule's
    finding at its floor (a summary row alone names no shown line: nothing to pin)."""
    shown, explained = _shown(item), {n for t in truths for n in t.lines}
    out: dict[str, Truth] = {}
    for s in item.signals:
        if s.rule_id.startswith(BASELINE_RULES):
            continue
        lines = set(s.line_numbers) & shown
        if not lines or lines & explained:
            continue
        truth = out.setdefault(s.rule_id, Truth(lines=set(), category=s.category, risk=s.level,
                                                techniques=list(s.techniques), phrase=s.title))
        truth.lines |= lines
    return list(out.values())


def dismissal(signals: Sequence[Signal]) -> str:
    """Why the deviations this prompt shows are ordinary (the reason a dismissed record keeps)."""
    kinds = [s.rule_id.removeprefix(BASELINE_RULES) for s in signals if s.rule_id.startswith(BASELINE_RULES)]
    kinds = list(dict.fromkeys(kinds))
    return DISMISSAL.get(kinds[0], DISMISSAL_ANY) if len(kinds) == 1 else DISMISSAL_ANY


def item_answer(item: ReviewItem, truths: Sequence[Truth], rng: random.Random) -> LLMAssessment:
    """The target: the incidents' findings (and the rules' on shown lines), else the dismissal."""
    truths = [*truths, *rule_truths(item, truths)]
    found = answer(truths, item.part, item.signals, rng)
    if found.findings:
        return found
    return LLMAssessment(verdicts=found.verdicts, findings=[], recommendation=dismissal(item.signals))


# ---- examples ----------------------------------------------------------------------------------------

def examples_of(items: Sequence[ReviewItem], labels_of: Callable[[str], FileLabels], *, key: Callable[[ReviewItem], str],
                meta: Callable[[ReviewItem], dict], seed: int = 0) -> Iterator:
    """An `Example` per item whose labels can say what it shows."""
    from logwarden.train.dataset import example_for

    for item in items:
        truths = label_truths(item, labels_of(item.source))
        if truths is None:
            continue
        rng = random.Random(f"{seed}/{key(item)}")
        target = item_answer(item, truths, rng)
        yield example_for(key(item), item.part, target, item.signals,
                          meta(item) | {"target": "finding" if target.findings else "dismissal"})


# ---- the realdata split's train side ------------------------------------------------------------------

MAX_PER_SOURCE = {"httpparams": 1000, "loghub": 150}  # findings per source and pass: the big uniform ones would drown the rest
HISTORY_SHARES = (0.5, 0.25)  # two pasts per source: a shorter one leaves more ordinary variety to judge


def sites_dir(name: str) -> Path:
    """A fixed folder for a split side's sites (`history_scenario`): the digest shows the test file's
    path, so recording the prompts and replaying their answers must put them in the same place."""
    return Path(tempfile.gettempdir()) / "logwarden-sites" / name


def load_rich_units(folder: Path) -> list[RichUnit]:
    import json

    rows = (folder / "labels.jsonl").read_text(encoding="utf-8").splitlines()
    return [RichUnit.model_validate(json.loads(line)) for line in rows if line.strip()]


def realdata_examples(split: dict, *, count_tokens: CountTokens, folder: Path | None = None, seed: int = 0,
                      history_shares: Sequence[float] = HISTORY_SHARES, sources: Sequence[str] | None = None) -> Iterator:
    """Examples of the split's train side as `logwarden eval --history-share` runs it: each source a
    site whose first share of benign units the baseline learned, the rest and every attack analysed,
    once per share; of a source's findings at most `MAX_PER_SOURCE` a pass (a deterministic sample),
    every dismissal kept."""
    import shutil

    from logwarden.app.evaluate import filter_units, history_scenario, source_of
    from logwarden.train.realdata import realdata_dir, side_of

    folder = folder or realdata_dir()
    units = filter_units(load_rich_units(folder), side_of(split), "train")
    if sources is not None:
        units = [u for u in units if source_of(u.file) in sources]
    for share in history_shares:
        out = sites_dir(f"train-{share}")
        shutil.rmtree(out, ignore_errors=True)
        scenario = history_scenario(units, folder, out, share=share, seed=seed)
        by_file: dict[str, list[RichUnit]] = defaultdict(list)
        for unit in scenario.units:
            by_file[unit.file].append(unit)
        labels = {name: FileLabels(group) for name, group in by_file.items()}
        root = scenario.folder.resolve()
        for test in scenario.test:
            name = test.resolve().relative_to(root).as_posix()
            made = list(examples_of(
                collect_items([test], scenario.history, count_tokens),
                lambda _source, name=name: labels.get(name, FileLabels([])),
                key=lambda item, name=name, share=share: f"realdata/{share}/{name}#{item.span[0]}.{item.part.index}",
                meta=lambda item, name=name: {"source": "realdata", "group": source_of(name),
                                              "window": f"{name}#{item.span[0]}"},
                seed=seed))
            yield from _capped(made, MAX_PER_SOURCE.get(source_of(name)), f"{seed}/{share}/{name}")
        shutil.rmtree(out, ignore_errors=True)


def _capped(made: list, cap: int | None, key: str) -> list:
    findings = [i for i, e in enumerate(made) if e.meta["target"] == "finding"]
    if cap is None or len(findings) <= cap:
        return made
    drop = set(findings) - set(random.Random(key).sample(findings, cap))
    return [e for i, e in enumerate(made) if i not in drop]


# ---- generated scenario windows ------------------------------------------------------------------------

HISTORY_SCENARIOS = 4000  # benign draws whose lines make the generated sites' and hosts' past


class _Lines:
    """A list of `LogLine`s read to the end, as `Pipeline.process` takes a source's lines."""

    def __init__(self, lines):
        self.lines = list(lines)
        self.start_line = 1
        self.end_offset = sum(len(line.text.encode()) + 1 for line in self.lines)
        self.next_line_no = len(self.lines) + 1
        self.fingerprint = None
        self.changed = False

    def __iter__(self):
        return iter(self.lines)


def _log_lines(texts: Sequence[str], source: str):
    from logwarden.app.events import LogLine

    out, offset = [], 0
    for no, text in enumerate(texts, start=1):
        out.append(LogLine(source=source, inode=0, offset=offset, line_no=no, text=str(text)))
        offset += len(str(text).encode()) + 1
    return out


def scenario_history(folder: Path, *, seed: int, n: int = HISTORY_SCENARIOS) -> list[Path]:
    """History files: the benign lines (a benign scenario's all, an attack scenario's noise) of `n`
    draws of their own seed keys (`<seed>/history/<i>`), one file each, named like its log."""
    from logwarden.train.scenarios import Noise, draw

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        scenario = draw(random.Random(f"{seed}/history/{i}"))
        benign = scenario.lines if scenario.category == "benign" else [x for x in scenario.lines if isinstance(x, Noise)]
        if not benign:
            continue
        path = folder / f"{i:05d}" / Path(scenario.path).name  # the log's own name: a web site is its log's
        path.parent.mkdir(exist_ok=True)
        path.write_text("".join(str(line) + "\n" for line in benign), encoding="utf-8")
        paths.append(path)
    return paths


class ScenarioJudge:
    """A store whose baseline learned the generated history once; each scenario is then analysed as a
    source of its own against that history (its judging learns nothing into the store)."""

    def __init__(self, folder: Path, count_tokens: CountTokens, *, seed: int, history: int | None = None):
        import dataclasses

        from logwarden.app.baseline.learn import learn_paths
        from logwarden.app.run_options import RunOptions
        from logwarden.app.store import open_store

        self.count_tokens = count_tokens
        self.store = open_store(f"sqlite:///{folder}/judge.db")
        learn_paths(self.store, scenario_history(folder / "history", seed=seed, n=history or HISTORY_SCENARIOS))
        self.options = dataclasses.replace(RunOptions(), llm_budget="unlimited", final=True, node=None,
                                           commit_every_windows=None, incremental=True)
        self._inode = 0

    def _run(self, scenario, engine):
        import dataclasses

        from logwarden.app.pipeline import Pipeline

        options = dataclasses.replace(self.options, rules_only=engine is None)
        pipeline = Pipeline(self.store, engine, options, command="dataset")
        pipeline.baseline.flush = lambda tx: 0  # judged against the history alone, never learnt from
        self._inode += 1  # a source of its own: a fresh miner, as a test file after its history has
        pipeline.process(_Lines(_log_lines(scenario.lines, scenario.path)), source=scenario.path, inode=self._inode)
        return pipeline

    def items(self, scenario) -> list[ReviewItem]:
        """The prompts `analyze` queues for the scenario's window."""
        from logwarden.train.replay import RecordingEngine

        pipeline = self._run(scenario, RecordingEngine(self.count_tokens))
        return [ReviewItem.from_json(i) for i in self.store.pending_reviews(run_id=pipeline.run_id)]

    def records(self, scenario, engine=None) -> tuple[list, dict]:
        """The scenario's records after the model's review (`engine`; None: rules and baselines only),
        and the run's metrics."""
        from logwarden.app.store import RecordFilter

        pipeline = self._run(scenario, engine)
        pipeline.review()
        return (self.store.query_records(RecordFilter(run_id=pipeline.run_id), limit=100_000),
                pipeline.metrics.as_dict())

    def close(self) -> None:
        self.store.close()


def scenario_truths(scenario) -> list[Truth]:
    """The scenario's incidents as its line numbers (lines are matched by their text)."""
    numbers: dict[str, list[int]] = {}
    for no, text in enumerate(scenario.lines, start=1):
        numbers.setdefault(text, []).append(no)
    out = []
    for incident in scenario.incidents():
        lines = {n for text in incident.lines for n in numbers.get(text, [])}
        main = incident.what == scenario.what.split("; also in this window")[0]
        out.append(Truth(lines=lines, category=incident.category, risk=incident.risk, techniques=incident.techniques,
                         what=incident.what, advice=scenario.advice if main else []))
    return out


def scenario_examples(judge: ScenarioJudge, n: int, *, seed: int, split: str) -> Iterator:
    """Examples of `n` generated windows (`<seed>/<split>/<i>`, drawn as `dataset.examples_at` draws
    them) in production's shape: only the prompts `analyze` would queue (a window with no deviation
    queues none)."""
    from logwarden.train.dataset import example_for
    from logwarden.train.scenarios import draw

    for i in range(n):
        key = f"{seed}/{split}/{i}"
        rng = random.Random(key)
        scenario = draw(rng)
        truths = scenario_truths(scenario)
        meta = {"source": "generated", "scenario": scenario.name, "injected": scenario.injected,
                "truth": [scenario.category, scenario.risk], "window": key}
        for item in judge.items(scenario):
            target = item_answer(item, truths, rng)
            part_key = f"{key}#{item.span[0]}.{item.part.index}"
            yield example_for(part_key, item.part, target, item.signals,
                              meta | {"target": "finding" if target.findings else "dismissal"})


def benign_examples(judge: ScenarioJudge, n: int, *, seed: int) -> Iterator:
    """`n` more benign windows (`<seed>/benign/<i>`, benign generators only): the ordinary variety a
    baseline still flags is what the model learns to dismiss."""
    from logwarden.train.scenarios import GENERATORS, WEIGHTS

    names = sorted(name for name in GENERATORS if name.startswith("benign"))
    for i in range(n):
        key = f"{seed}/benign/{i}"
        rng = random.Random(key)
        scenario = GENERATORS[rng.choices(names, [WEIGHTS[name] for name in names])[0]](rng)
        meta = {"source": "generated", "scenario": scenario.name, "injected": scenario.injected,
                "truth": [scenario.category, scenario.risk], "window": key}
        for item in judge.items(scenario):
            target = item_answer(item, scenario_truths(scenario), rng)
            yield example_for_item(f"{key}#{item.span[0]}.{item.part.index}", item, target, meta)


def example_for_item(key: str, item: ReviewItem, target: LLMAssessment, meta: dict):
    from logwarden.train.dataset import example_for

    return example_for(key, item.part, target, item.signals,
                       meta | {"target": "finding" if target.findings else "dismissal"})


HELDOUT_HISTORY_SHARE = 0.5


def heldout_site(split: dict, *, seed: int = 7, share: float = HELDOUT_HISTORY_SHARE):
    """The realdata held-out side as `logwarden eval --history-share 0.5` scores it (a `HistoryScenario`),
    written to a fixed folder: the digest shows the test files' paths, so the prompts recorded for
    the GPU box and those replayed when scoring must agree."""
    import shutil

    from logwarden.app.evaluate import filter_units, history_scenario, load_labels
    from logwarden.train.realdata import realdata_dir, side_of

    folder = realdata_dir()
    held = filter_units(load_labels(folder / "labels.jsonl"), side_of(split), "heldout")
    out = sites_dir("heldout")
    shutil.rmtree(out, ignore_errors=True)
    return history_scenario(held, folder, out, share=share, seed=seed)
