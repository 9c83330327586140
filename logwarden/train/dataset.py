"""The training set: windows rendered exactly as the pipeline renders them, with targets.

Owns: turning a `Scenario` (train/scenarios.py) into what the model will see in production — the
raw lines go through the real parser (`parse_stream`), the real Drain miner and windowing, the
real detectors, `build_digest` + `Digest.parts` and `user_prompt`, one example per prompt — and
writing each prompt's target findings from the scenario's incidents (their exact lines) with
`targets.answer`. Mixes in the real labelled logs of the realdata split's train side
(`train/realdata.py`) for formats and attacks the generators do not write, splits train /
validation by generator seed (validation is generated only: the realdata held-out side is
scored through the pipeline instead) and writes `train.jsonl` / `val.jsonl`
(`{"system","user","assistant","meta"}`, `meta.schema` = the prompt's own JSON schema) plus
`manifest.json`. Knows nothing of training, the engine internals or the store.
"""

from __future__ import annotations

import hashlib
import json
import random
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from logwarden.app.config import declared
from logwarden.app.detect import shipped_ruleset
from logwarden.app.digest import DigestPart
from logwarden.app.events import LogLine, Signal
from logwarden.app.grounding import ground
from logwarden.app.mine import Window
from logwarden.app.triage import Triage, prepare_lines
from logwarden.engine.api import CountTokens, approx_tokens
from logwarden.errors import ConfigError
from logwarden.prompts import PROMPT_VERSION, system_prompt, user_prompt
from logwarden.schemas import LLMAssessment, risk_rank
from logwarden.train.scenarios import Scenario, draw
from logwarden.train.targets import Truth, answer

PROMPT_TOKEN_BUDGET = declared("prompt_token_budget")  # train on what production sends
DATASET_VERSION = "7"  # 7: analyze_v4 prompts (a verdict per deviation) as the pipeline queues them (train/production.py)
Generated = Callable[[int, str], Iterable["Example"]]  # (windows, split name) → their examples


@dataclass(slots=True)
class Rendered:
    """One scenario after the pipeline's own stages: one window, one or more prompts."""

    scenario: Scenario
    triage: Triage

    @property
    def window(self) -> Window:
        return self.triage.window

    @property
    def signals(self) -> list[Signal]:
        return self.triage.signals

    @property
    def parts(self) -> list[DigestPart]:
        return self.triage.parts

    @property
    def user(self) -> str:
        """The first prompt (most scenarios fit one)."""
        return user_prompt(self.parts[0].text)


@dataclass(slots=True)
class Example:
    key: str  # "<seed>/<split>/<index>" for generated windows (+ "#<part>"), "realdata/<file>#<window>.<part>"
    system: str
    user: str
    assistant: str
    meta: dict = field(default_factory=dict)

    def as_json(self) -> str:
        return json.dumps({"system": self.system, "user": self.user, "assistant": self.assistant,
                           "meta": self.meta | {"key": self.key}}, ensure_ascii=False)


# ---- rendering through the pipeline's stages ------------------------------------------------------

def render(scenario: Scenario, count_tokens: CountTokens = approx_tokens,
           budget: int = PROMPT_TOKEN_BUDGET) -> Rendered:
    """One scenario = one window: the triage path (parse → mine → detect → digest → prompts)."""
    lines, offset = [], 0
    for no, text in enumerate(scenario.lines, start=1):
        lines.append(LogLine(source=scenario.path, inode=0, offset=offset, line_no=no, text=text))
        offset += len(text.encode()) + 1
    return Rendered(scenario, prepare_lines(lines, source=scenario.path, path=scenario.path, budget_tokens=budget,
                                            count_tokens=count_tokens, rules=shipped_ruleset()))  # the same on every machine


# ---- targets -----------------------------------------------------------------------------------------

def truths(rendered: Rendered) -> list[Truth]:
    """The scenario's incidents as line numbers of its window (lines are matched by their text)."""
    numbers: dict[str, list[int]] = {}
    for no, text in enumerate(rendered.scenario.lines, start=1):
        numbers.setdefault(text, []).append(no)
    scenario = rendered.scenario
    out = []
    for incident in scenario.incidents():
        lines = {n for text in incident.lines for n in numbers.get(text, [])}
        main = incident.what == scenario.what.split("; also in this window")[0]
        out.append(Truth(lines=lines, category=incident.category, risk=incident.risk, techniques=incident.techniques,
                         what=incident.what, advice=scenario.advice if main else []))
    return out


def assistant_text(answer: LLMAssessment) -> str:
    """The answer exactly as the engine's grammar spells it (xgrammar, no free whitespace: ", " and ": ")."""
    return json.dumps(answer.model_dump(mode="json"), ensure_ascii=False)


def example_for(key: str, part: DigestPart, target: LLMAssessment, signals: list[Signal], meta: dict) -> Example:
    top = max(target.findings, key=lambda f: risk_rank(f.risk_level), default=None)
    meta = meta | {"category": top.category if top else "benign", "risk": top.risk_level if top else "info",
                   "findings": len(target.findings), "part": part.index, "parts": part.total,
                   "rules": sorted({s.rule_id for s in signals}), "floor": [[s.category, s.level] for s in signals],
                   "schema": part.schema()}
    return Example(key, system_prompt(), user_prompt(part.text), assistant_text(target), meta)


# ---- examples and files --------------------------------------------------------------------------------

def examples_at(key: str, count_tokens: CountTokens = approx_tokens) -> tuple[list[Example], Rendered]:
    """The examples (one per prompt) of one seed key; the same key always gives the same examples."""
    rng = random.Random(key)
    rendered = render(draw(rng), count_tokens)
    window_truths = truths(rendered)
    scenario = rendered.scenario
    meta = {"source": "generated", "scenario": scenario.name, "injected": scenario.injected,
            "truth": [scenario.category, scenario.risk]}
    out = []
    for part in rendered.parts:
        target = answer(window_truths, part, rendered.signals, rng)
        part_key = key if part.total == 1 else f"{key}#{part.index}"
        out.append(example_for(part_key, part, target, rendered.signals, meta | {"window": key}))
    return out, rendered


def example_at(key: str, count_tokens: CountTokens = approx_tokens) -> tuple[Example, Rendered]:
    """The first example of a seed key (most windows have one prompt)."""
    found, rendered = examples_at(key, count_tokens)
    return found[0], rendered


def examples(n: int, *, seed: int, split: str, count_tokens: CountTokens = approx_tokens) -> Iterator[Example]:
    """Examples of `n` generated windows (a window of several prompts gives several)."""
    for i in range(n):
        yield from examples_at(f"{seed}/{split}/{i}", count_tokens)[0]


def build_dataset(out: Path, *, n: int, seed: int = 0, val_fraction: float = 0.1,
                  count_tokens: CountTokens = approx_tokens, tokenizer_name: str = "approx",
                  relabel: Callable[[list[Example]], list[Example]] | None = None,
                  extra_train: Iterable[Example] = (), generated: Generated | None = None) -> dict:
    """Write train.jsonl / val.jsonl / manifest.json; returns the manifest. `n` generated windows
    (`val_fraction` of them for validation) made by `generated` (default: `examples`, each window
    rendered alone; `production.scenario_examples` renders them as `analyze` queues them);
    `extra_train` (the realdata train side) joins training."""
    if n < 2 or not 0 < val_fraction < 1:
        raise ConfigError(f"--n must be ≥ 2 and the validation fraction in (0, 1); got n={n}, {val_fraction}.")
    n_val = max(1, round(n * val_fraction))
    make = generated or (lambda count, split: examples(count, seed=seed, split=split, count_tokens=count_tokens))
    splits = {"train": list(make(n - n_val, "train")), "val": list(make(n_val, "val"))}
    train_users = {e.user for e in splits["train"]}
    splits["val"] = [e for e in splits["val"] if e.user not in train_users]  # no identical prompt in both
    if relabel is not None:
        splits = {name: relabel(items) for name, items in splits.items()}
    splits["train"] += list(extra_train)
    out.mkdir(parents=True, exist_ok=True)
    for name, items in splits.items():
        (out / f"{name}.jsonl").write_text("".join(e.as_json() + "\n" for e in items), encoding="utf-8")
    manifest = _manifest(splits, seed=seed, tokenizer_name=tokenizer_name, out=out, count_tokens=count_tokens)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return manifest


def _manifest(splits: dict[str, list[Example]], *, seed: int, tokenizer_name: str, out: Path,
              count_tokens: CountTokens) -> dict:
    answers = [count_tokens(e.assistant) for items in splits.values() for e in items]
    targets = {name: dict(Counter(e.meta.get("target", "finding" if e.meta["findings"] else "no findings")
                                  for e in items)) for name, items in splits.items()}
    return {"dataset_version": DATASET_VERSION, "seed": seed, "prompt_version": PROMPT_VERSION, "targets": targets,
            "prompt_token_budget": PROMPT_TOKEN_BUDGET, "token_counter": tokenizer_name,
            "counts": {name: len(items) for name, items in splits.items()},
            "sources": {name: dict(Counter(e.meta["source"] for e in items)) for name, items in splits.items()},
            "categories": {name: dict(Counter(e.meta["category"] for e in items)) for name, items in splits.items()},
            "scenarios": dict(Counter(e.meta.get("scenario", e.meta.get("group", "?")) for e in splits["train"])),
            "injected": sum(bool(e.meta.get("injected")) for items in splits.values() for e in items),
            "answer_tokens_mean": round(statistics.mean(answers), 1) if answers else 0,
            "targets_ungrounded": sum(ungrounded_in(e) for items in splits.values() for e in items),
            "sha256": {f"{name}.jsonl": hashlib.sha256((out / f"{name}.jsonl").read_bytes()).hexdigest()
                       for name in splits}}


def ungrounded_in(example: Example) -> int:
    """Entities a target names that its prompt lacks (0 by construction; counted to prove it)."""
    target = LLMAssessment.model_validate_json(example.assistant)
    texts = [f.anomaly for f in target.findings] + [target.recommendation]
    return sum(len(ground(text, example.user).ungrounded) for text in texts)


def load_examples(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
