"""Record the prompts a pipeline run sends, and replay answers generated elsewhere.

Owns two tiny `Engine`s for evaluating a model on another machine (the GPU box) while the
pipeline, the store and the scoring run here, unchanged: `RecordingEngine` answers every request
with a valid benign assessment (so the pipeline never trips its circuit breaker) and keeps the
requests; `ReplayEngine` answers each request with the text generated for that exact prompt. Each recorded
request keeps its own JSON schema (the evidence ids its digest part shows), so the GPU box
generates under the same per-prompt grammar the pipeline would use.
Same windows, same digests, same prompts, same merge policy — only generation moved.
Knows nothing of logs or the store; prompts are opaque strings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from logwarden.engine.api import Engine, Generation, GenStats, Request, Sampling, TextStream
from logwarden.errors import InputError

BENIGN = json.dumps({"findings": [], "recommendation": "recording"})


class RecordingEngine(Engine):
    """Keeps every distinct request; answers benign/info so the run goes on as usual."""

    def __init__(self, count_tokens: Callable[[str], int], model_name: str = "recording"):
        self._count_tokens = count_tokens
        self.model_name = model_name
        self.requests: dict[str, Request] = {}

    def generate(self, requests: Sequence[Request], *, max_new_tokens: int, schema: dict | None = None,
                 sampling: Sampling = Sampling()) -> list[Generation]:
        for request in requests:
            self.requests.setdefault(request.user, request)
        return [Generation(BENIGN, GenStats(batch_size=len(requests)), finished=True) for _ in requests]

    def stream(self, request: Request, *, max_new_tokens: int, schema: dict | None = None,
               sampling: Sampling = Sampling()) -> TextStream:
        raise NotImplementedError("recording is for batch runs")

    def count_tokens(self, text: str) -> int:
        return self._count_tokens(text)

    def describe(self) -> dict:
        return {"model": self.model_name, "recorded": len(self.requests)}

    def write(self, path: Path) -> int:
        rows = [{"system": r.system, "user": r.user, "schema": r.schema} for r in self.requests.values()]
        path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        return len(rows)


class ReplayEngine(Engine):
    """Answers from `{"user", "text", "finished", "stats"?}` rows generated for these prompts."""

    def __init__(self, answers: dict[str, dict], count_tokens: Callable[[str], int], *, model_name: str,
                 adapter_name: str | None = None, partial: bool = False):
        self.answers = answers
        self.partial = partial  # a prompt without an answer fails (a sample was answered), instead of raising
        self._count_tokens = count_tokens
        self.model_name = model_name
        self.adapter_name = adapter_name

    @classmethod
    def from_file(cls, path: Path, count_tokens: Callable[[str], int], **kw) -> ReplayEngine:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return cls({row["user"]: row for row in rows}, count_tokens, **kw)

    def generate(self, requests: Sequence[Request], *, max_new_tokens: int, schema: dict | None = None,
                 sampling: Sampling = Sampling()) -> list[Generation]:
        return [self._answer(r) for r in requests]

    def _answer(self, request: Request) -> Generation:
        row = self.answers.get(request.user)
        if row is None and self.partial:  # an answer that changes nothing (no verdict, no finding)
            return Generation(json.dumps({"findings": []}), GenStats(), finished=True)
        if row is None:
            raise InputError("a prompt has no recorded answer: the windows changed since the prompts were "
                             "recorded. Fix: record the prompts again and regenerate the answers.")
        stats = GenStats(**{k: v for k, v in (row.get("stats") or {}).items() if k in GenStats.__slots__})
        return Generation(row["text"], stats, finished=row.get("finished", True), error=row.get("error"))

    def stream(self, request: Request, *, max_new_tokens: int, schema: dict | None = None,
               sampling: Sampling = Sampling()) -> TextStream:
        raise NotImplementedError("replay is for batch runs")

    def count_tokens(self, text: str) -> int:
        return self._count_tokens(text)

    def describe(self) -> dict:
        return {"model": self.model_name, "adapter": self.adapter_name, "replayed": len(self.answers)}
