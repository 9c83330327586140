"""The one stand-in for a model, for tests of the code around it (the proof of quality is the real model).

`FakeEngine(script)` answers from a script and keeps every prompt it was sent. Being an `Engine`, a
fake that lacks a method cannot be built, and one asked for more answers than it was given fails the
test loudly instead of inventing one.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Generator, Sequence
from typing import Any

from logwarden.engine.api import Device, Engine, Generation, GenStats, Request, Sampling, TextStream

NOTHING = '{"findings":[],"recommendation":"No action needed."}'  # an assessment that finds nothing

Reply = str | dict | Generation | BaseException
Script = Reply | Sequence[Reply] | Callable[[Request], Reply]


class FakeEngine(Engine):
    """Answers each request from `script`:

    - one reply for every request (the default: an assessment that finds nothing),
    - a list: a queue, one reply per request in order (an exhausted queue fails the test),
    - a callable of the request (it may read `calls` to act on the n-th call).

    A reply is text, a dict (sent as JSON), a `Generation`, or an exception, raised from the call that
    reaches it. Text that does not end in `}` comes back unfinished, as a model cut off by its budget.
    `hold`: every call waits until `cancel()` (a model in a long generation), then returns cancelled
    generations. `pieces`: how many pieces a stream cuts its text into.

    History: `requests` (every request, in order), `calls` (each call's requests), `max_new_tokens`
    (each call's budget); `generating` is set when a call starts."""

    def __init__(self, script: Script = NOTHING, *, model_name: str = "fake", adapter_name: str | None = None,
                 device: Device = "cpu", hold: bool = False, hold_s: float = 120.0, pieces: int = 2):
        self.script = list(script) if isinstance(script, (list, tuple)) else script
        self.model_name, self.adapter_name, self.device = model_name, adapter_name, device
        self.hold, self.hold_s, self.pieces = hold, hold_s, pieces
        self.requests: list[Request] = []
        self.calls: list[list[Request]] = []
        self.max_new_tokens: list[int] = []
        self.generating = threading.Event()
        self._cancelled = threading.Event()

    @property
    def prompts(self) -> list[str]:
        """The user part of every request, in order."""
        return [r.user for r in self.requests]

    def generate(self, requests: Sequence[Request], *, max_new_tokens: int, schema: dict[str, Any] | None = None,
                 sampling: Sampling = Sampling()) -> list[Generation]:
        self._begin(requests, max_new_tokens)
        if self.hold:
            self._cancelled.wait(self.hold_s)
            return [Generation("", GenStats(), finished=False, error="cancelled") for _ in requests]
        return [self._reply(r, len(requests)) for r in requests]

    def stream(self, request: Request, *, max_new_tokens: int, schema: dict[str, Any] | None = None,
               sampling: Sampling = Sampling()) -> TextStream:
        self._begin([request], max_new_tokens)
        return TextStream(self._pieces(self._reply(request, 1)))

    def count_tokens(self, text: str) -> int:
        return len(text) // 4

    def describe(self) -> dict[str, Any]:
        return {"model": self.model_name, "adapter": self.adapter_name, "device": self.device}

    def cancel(self) -> None:
        self._cancelled.set()

    # ---- the script ----------------------------------------------------------------------------

    def _begin(self, requests: Sequence[Request], max_new_tokens: int) -> None:
        self.calls.append(list(requests))
        self.requests += requests
        self.max_new_tokens.append(max_new_tokens)
        self.generating.set()

    def _reply(self, request: Request, batch: int) -> Generation:
        if callable(self.script):
            reply = self.script(request)
        elif isinstance(self.script, list):
            assert self.script, f"FakeEngine: no scripted answer left for request #{len(self.requests)}"
            reply = self.script.pop(0)
        else:
            reply = self.script
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, Generation):
            return reply
        text = reply if isinstance(reply, str) else json.dumps(reply)
        stats = GenStats(prompt_tokens=self.count_tokens(request.user), new_tokens=max(1, self.count_tokens(text)),
                         batch_size=batch, model=self.model_name, device=self.device)
        return Generation(text, stats, finished=text.rstrip().endswith("}"))

    def _pieces(self, generation: Generation) -> Generator[str, None, Generation]:
        size = max(1, -(-len(generation.text) // self.pieces))
        for start in range(0, len(generation.text), size):
            yield generation.text[start:start + size]
        return generation
