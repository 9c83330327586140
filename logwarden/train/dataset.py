"""The training set: generated windows rendered exactly as the pipeline renders them, with targets.

Owns: turning a `Scenario` (train/scenarios.py) into what the model will see in production — the
raw lines go through the real parser (`parse_stream`), the real Drain miner and windowing, the
real detectors, `build_digest` + `Digest.fit` and `user_prompt` — and writing the target
`LLMAssessment` from the facts of that window (counts, addresses, accounts, times) with varied
phrasing. Targets agree with the rule floor: when rules fired, the category is one of theirs and
the risk is never below the highest rule level. Splits train/validation by generator seed and
writes `train.jsonl` / `val.jsonl` (`{"system","user","assistant","meta"}`) plus `manifest.json`.
Knows nothing of training, the engine internals or the store.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from logwarden.errors import ConfigError
from logwarden.app.mine import Window
from logwarden.app.models import LogLine, Signal
from logwarden.app.detect import shipped_ruleset
from logwarden.app.triage import prepare_lines
from logwarden.prompts import PROMPT_VERSION, system_prompt
from logwarden.schemas import LLMAssessment, risk_rank
from logwarden.schemas.assessment import TEXT_MAX
from logwarden.train.scenarios import Scenario, draw

PROMPT_TOKEN_BUDGET = 700  # RunOptions.prompt_token_budget's default: train on what production sends
DATASET_VERSION = "3"
TokenCounter = Callable[[str], int]


@dataclass(slots=True)
class Rendered:
    """One scenario after the pipeline's own stages."""

    scenario: Scenario
    window: Window
    signals: list[Signal]
    user: str


@dataclass(slots=True)
class Example:
    key: str  # the generator seed key: "<seed>/<split>/<index>"
    system: str
    user: str
    assistant: str
    meta: dict = field(default_factory=dict)

    def as_json(self) -> str:
        return json.dumps({"system": self.system, "user": self.user, "assistant": self.assistant,
                           "meta": self.meta | {"key": self.key}}, ensure_ascii=False)


def approx_tokens(text: str) -> int:
    """Fallback token count when no tokenizer is at hand (Qwen averages ~3.3 chars/token on logs)."""
    return len(text) // 3 + 1


# ---- rendering through the pipeline's stages ------------------------------------------------------

def render(scenario: Scenario, count_tokens: TokenCounter = approx_tokens,
           budget: int = PROMPT_TOKEN_BUDGET) -> Rendered:
    """One scenario = one window: the triage path (parse → mine → detect → digest → prompt)."""
    lines, offset = [], 0
    for no, text in enumerate(scenario.lines, start=1):
        lines.append(LogLine(source=scenario.path, inode=0, offset=offset, line_no=no, text=text))
        offset += len(text.encode()) + 1
    prepared = prepare_lines(lines, source=scenario.path, path=scenario.path, budget_tokens=budget,
                             count_tokens=count_tokens, rules=shipped_ruleset())  # the same on every machine
    return Rendered(scenario, prepared.window, prepared.signals, prepared.prompt)


# ---- targets -----------------------------------------------------------------------------------------

def agree_with_rules(category: str, risk: str, signals: list[Signal]) -> tuple[str, str]:
    """The scenario's truth, made consistent with the floor the rules set."""
    if not signals:
        return category, risk
    floor = max((s.level for s in signals), key=risk_rank)
    categories = [s.category for s in sorted(signals, key=lambda s: -risk_rank(s.level))]
    if category not in categories:
        category = categories[0]
    return category, max(risk, floor, key=risk_rank)


def _facts(window: Window) -> dict:
    ips, users = Counter(), Counter()
    for event in window.events:
        if ip := event.fields.get("src_ip"):
            ips[str(ip)] += 1
        if user := event.fields.get("user"):
            users[str(user)] += 1
    first, last = window.first_ts, window.last_ts
    return {"lines": len(window.events), "host": window.host(), "ips": [ip for ip, _ in ips.most_common(3)],
            "users": [u for u, _ in users.most_common(3)], "first": first.isoformat() if first else None,
            "last": last.isoformat() if last else None, "start": window.line_start, "end": window.line_end}


def _trace(facts: dict, source: str, rng: random.Random) -> str:
    parts = []
    if facts["ips"]:
        parts.append(rng.choice(("source ", "from ", "origin ")) + ", ".join(facts["ips"]))
    if facts["users"]:
        parts.append(rng.choice(("accounts ", "users ", "account(s) ")) + ", ".join(facts["users"]))
    where = f"{source}" + (f" on {facts['host']}" if facts["host"] else "")
    when = f"{facts['first']} .. {facts['last']}" if facts["first"] else "time not in the log"
    place = rng.choice((f"{where}, lines {facts['start']}-{facts['end']}", f"lines {facts['start']}-{facts['end']} of {where}"))
    rng.shuffle(parts)
    return "; ".join([place, *parts, when])


def _anomaly(scenario: Scenario, facts: dict, rng: random.Random) -> str:
    what = scenario.what[0].upper() + scenario.what[1:]
    if scenario.category == "benign":
        return rng.choice((f"None: {scenario.what} ({facts['lines']} lines).", f"{what}; nothing abnormal.",
                           f"No anomaly in {facts['lines']} lines: {scenario.what}."))
    return rng.choice((f"{what}.", f"{what} ({facts['lines']} lines in the window).", f"Detected {scenario.what}."))


def _clip(text: str) -> str:
    return text if len(text) <= TEXT_MAX else text[: TEXT_MAX - 1] + "…"


def target(rendered: Rendered, rng: random.Random) -> LLMAssessment:
    scenario = rendered.scenario
    category, risk = agree_with_rules(scenario.category, scenario.risk, rendered.signals)
    facts = _facts(rendered.window)
    techniques = scenario.techniques if category == scenario.category else \
        sorted({t for s in rendered.signals if s.category == category for t in s.techniques})
    return LLMAssessment(anomaly=_clip(_anomaly(scenario, facts, rng)), trace=_clip(_trace(facts, scenario.path, rng)),
                         recommendation=_clip(rng.choice(scenario.advice)), category=category,
                         techniques=techniques[:3], risk_level=risk)


def assistant_text(answer: LLMAssessment) -> str:
    """The answer exactly as the engine's grammar spells it (xgrammar, no free whitespace: ", " and ": ")."""
    return json.dumps(answer.model_dump(mode="json"), ensure_ascii=False)


# ---- examples and files --------------------------------------------------------------------------------

def example_at(key: str, count_tokens: TokenCounter = approx_tokens) -> tuple[Example, Rendered]:
    """The example of one seed key (deterministic: the same key gives the same example)."""
    rng = random.Random(key)
    rendered = render(draw(rng), count_tokens)
    answer = target(rendered, rng)
    scenario = rendered.scenario
    meta = {"scenario": scenario.name, "category": answer.category, "risk": answer.risk_level,
            "injected": scenario.injected, "rules": sorted({s.rule_id for s in rendered.signals}),
            "floor": [[s.category, s.level] for s in rendered.signals]}
    return Example(key, system_prompt(), rendered.user, assistant_text(answer), meta), rendered


def examples(n: int, *, seed: int, split: str, count_tokens: TokenCounter = approx_tokens) -> Iterator[Example]:
    for i in range(n):
        yield example_at(f"{seed}/{split}/{i}", count_tokens)[0]


def build_dataset(out: Path, *, n: int, seed: int = 0, val_fraction: float = 0.1,
                  count_tokens: TokenCounter = approx_tokens, tokenizer_name: str = "approx",
                  relabel: Callable[[list[Example]], list[Example]] | None = None) -> dict:
    """Write train.jsonl / val.jsonl / manifest.json; returns the manifest."""
    if n < 2 or not 0 < val_fraction < 1:
        raise ConfigError(f"--n must be ≥ 2 and the validation fraction in (0, 1); got n={n}, {val_fraction}.")
    n_val = max(1, round(n * val_fraction))
    splits = {"train": list(examples(n - n_val, seed=seed, split="train", count_tokens=count_tokens)),
              "val": list(examples(n_val, seed=seed, split="val", count_tokens=count_tokens))}
    train_users = {e.user for e in splits["train"]}
    splits["val"] = [e for e in splits["val"] if e.user not in train_users]  # no identical window in both
    if relabel is not None:
        splits = {name: relabel(items) for name, items in splits.items()}
    out.mkdir(parents=True, exist_ok=True)
    for name, items in splits.items():
        (out / f"{name}.jsonl").write_text("".join(e.as_json() + "\n" for e in items), encoding="utf-8")
    manifest = _manifest(splits, seed=seed, tokenizer_name=tokenizer_name, out=out)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return manifest


def _manifest(splits: dict[str, list[Example]], *, seed: int, tokenizer_name: str, out: Path) -> dict:
    return {"dataset_version": DATASET_VERSION, "seed": seed, "prompt_version": PROMPT_VERSION,
            "prompt_token_budget": PROMPT_TOKEN_BUDGET, "token_counter": tokenizer_name,
            "counts": {name: len(items) for name, items in splits.items()},
            "categories": {name: dict(Counter(e.meta["category"] for e in items)) for name, items in splits.items()},
            "scenarios": dict(Counter(e.meta["scenario"] for e in splits["train"])),
            "injected": sum(e.meta["injected"] for items in splits.values() for e in items),
            "sha256": {f"{name}.jsonl": hashlib.sha256((out / f"{name}.jsonl").read_bytes()).hexdigest()
                       for name in splits}}


def load_examples(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
