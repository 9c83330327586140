"""Distillation: relabel generated windows with a larger model, keeping only trustworthy answers.

Owns: asking a teacher (a local model spec/path through `engine.load`, or an OpenAI-compatible
URL through `OpenAIEngine`) for each example's answer under the example's own schema (the
evidence ids its prompt shows), and keeping an answer only when it validates and agrees with the
dataset's label: the same finding categories as the target (none for a benign prompt), each
finding pointing at lines of a target finding of its category, no risk below the target's, and
no entity its prompt lacks. Other examples keep their written-from-facts target. Knows nothing of
files or training.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from logwarden.app.grounding import ground
from logwarden.app.postprocess import AssessmentError, parse_assessment
from logwarden.engine.api import Engine, Request
from logwarden.schemas import LLMAssessment, assessment_json_schema, risk_rank
from logwarden.train.dataset import Example, assistant_text


def agrees_with_label(answer: LLMAssessment, target: LLMAssessment, user: str) -> bool:
    """The teacher's answer says what the label says: same categories, overlapping evidence of each,
    never a lower risk, and every fact it names is in the prompt."""
    wanted = {f.category: f for f in target.findings}
    if {f.category for f in answer.findings} != set(wanted):
        return False
    for finding in answer.findings:
        label = wanted[finding.category]
        if not set(finding.evidence) & set(label.evidence) or risk_rank(finding.risk_level) < risk_rank(label.risk_level):
            return False
    texts = [f.anomaly for f in answer.findings] + [answer.recommendation]
    return not any(ground(text, user).ungrounded for text in texts)


def relabel(examples: list[Example], engine: Engine, *, batch: int = 16) -> list[Example]:
    out: list[Example] = []
    for start in range(0, len(examples), batch):
        part = examples[start:start + batch]
        requests = [Request(e.system, e.user, schema=e.meta.get("schema")) for e in part]
        generations = engine.generate(requests, schema=assessment_json_schema(), max_new_tokens=320)
        out += [_choose(e, g.text if g.finished and not g.error else None) for e, g in zip(part, generations)]
    return out


def _choose(example: Example, text: str | None) -> Example:
    try:
        answer = parse_assessment(text) if text else None
    except AssessmentError:
        answer = None
    target = LLMAssessment.model_validate_json(example.assistant)
    if answer is None or not agrees_with_label(answer, target, example.user):
        return Example(example.key, example.system, example.user, example.assistant, example.meta | {"teacher": "rejected"})
    return Example(example.key, example.system, example.user, assistant_text(answer), example.meta | {"teacher": "accepted"})


def teacher_relabeller(spec: str, *, cache_dir: Path, model_name: str | None = None) -> Callable[[list[Example]], list[Example]]:
    """`cache_dir`: where a local model is assembled (the settings' model cache)."""
    engine = _open(spec, model_name, cache_dir)
    return lambda examples: relabel(examples, engine)


def _open(spec: str, model_name: str | None, cache_dir: Path) -> Engine:
    if spec.startswith(("http://", "https://")):
        from logwarden.engine.openai_backend import OpenAIEngine

        return OpenAIEngine([spec], model=model_name or "default")
    from logwarden.engine.load import load_engine

    return load_engine(model=spec, adapter=None, cache_dir=cache_dir)


__all__ = ["agrees_with_label", "relabel", "teacher_relabeller"]
