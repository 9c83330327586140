"""Distillation: relabel generated windows with a larger model, keeping only trustworthy answers.

Owns: asking a teacher (a local model spec/path through `engine.load`, or an OpenAI-compatible
URL through `OpenAIEngine`) for each example's assessment with the JSON schema, and keeping an
answer only when it validates and agrees with the rule floor recorded in the example's meta
(category among the fired rules' categories, risk never below the highest rule level); other
examples keep their templated target. Knows nothing of files or training.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from logwarden.app.postprocess import AssessmentError, parse_assessment
from logwarden.engine.api import Engine, Request
from logwarden.schemas import LLMAssessment, assessment_json_schema, risk_rank
from logwarden.train.dataset import Example, assistant_text


def agrees_with_floor(answer: LLMAssessment, floor: Sequence[Sequence[str]]) -> bool:
    """`floor` = [[category, level], ...] of the rules that fired (empty: anything valid goes)."""
    if not floor:
        return True
    top = max(risk_rank(level) for _, level in floor)
    return answer.category in {c for c, _ in floor} and risk_rank(answer.risk_level) >= top


def relabel(examples: list[Example], engine: Engine, *, batch: int = 16) -> list[Example]:
    out: list[Example] = []
    for start in range(0, len(examples), batch):
        part = examples[start:start + batch]
        generations = engine.generate([Request(e.system, e.user) for e in part], schema=assessment_json_schema(),
                                      max_new_tokens=320)
        out += [_choose(e, g.text if g.finished and not g.error else None) for e, g in zip(part, generations)]
    return out


def _choose(example: Example, text: str | None) -> Example:
    try:
        answer = parse_assessment(text) if text else None
    except AssessmentError:
        answer = None
    if answer is None or not agrees_with_floor(answer, example.meta.get("floor", [])):
        return Example(example.key, example.system, example.user, example.assistant, example.meta | {"teacher": "rejected"})
    meta = example.meta | {"teacher": "accepted", "category": answer.category, "risk": answer.risk_level}
    return Example(example.key, example.system, example.user, assistant_text(answer), meta)


def teacher_relabeller(spec: str, *, model_name: str | None = None) -> Callable[[list[Example]], list[Example]]:
    engine = _open(spec, model_name)
    return lambda examples: relabel(examples, engine)


def _open(spec: str, model_name: str | None) -> Engine:
    if spec.startswith(("http://", "https://")):
        from logwarden.engine.openai_backend import OpenAIEngine

        return OpenAIEngine([spec], model=model_name or "default")
    from logwarden.app.config import get_settings
    from logwarden.engine.load import load_engine

    return load_engine(model=spec, adapter="none", cache_dir=get_settings().model_cache)


__all__ = ["agrees_with_floor", "relabel", "teacher_relabeller"]
