"""The engine's interface, shared by the local transformers backend and the OpenAI-compatible one.

A `Request` is a system prompt (identical across requests, so its KV cache is reused) plus the
user part. `generate` runs a batch; `stream` yields text pieces of one request as they arrive.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

MAX_BATCH = 8  # prompts per engine call by default (llama.cpp runs up to 4 of them as parallel slots)


@dataclass(frozen=True, slots=True)
class Request:
    """`schema`, when set, is this request's own JSON schema (e.g. one that admits only the
    evidence ids of its window); it overrides the `schema` given to `generate`/`stream`."""

    system: str
    user: str
    schema: dict[str, Any] | None = field(default=None, hash=False)  # dicts do not hash; equality still counts it


@dataclass(frozen=True, slots=True)
class Sampling:
    """Default greedy. temperature 0 = greedy."""

    temperature: float = 0.0
    top_p: float = 1.0
    repetition_penalty: float = 1.0
    seed: int | None = None


@dataclass(slots=True)
class GenStats:
    prompt_tokens: int = 0
    cached_prefix_tokens: int = 0
    new_tokens: int = 0
    ttft_s: float = 0.0
    total_s: float = 0.0
    tokens_per_s: float = 0.0
    peak_memory_mb: float = 0.0
    batch_size: int = 1
    attention: str = ""
    quant: str = ""
    device: str = ""
    model: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Generation:
    text: str
    stats: GenStats
    finished: bool  # the output ended on its own (EOS / grammar closed), not on the token budget
    error: str | None = None


class TextStream:
    """Iterate to get text pieces; after exhaustion `.generation` holds the full result."""

    def __init__(self, pieces: Iterator[str]):
        self._pieces = pieces
        self.generation: Generation | None = None

    def __iter__(self) -> Iterator[str]:
        return self._pieces


class Engine(Protocol):
    model_name: str
    adapter_name: str | None

    def generate(self, requests: Sequence[Request], *, schema: dict[str, Any] | None = None,
                 max_new_tokens: int = 256, sampling: Sampling = Sampling()) -> list[Generation]: ...

    def stream(self, request: Request, *, schema: dict[str, Any] | None = None, max_new_tokens: int = 256,
               sampling: Sampling = Sampling()) -> TextStream: ...

    def count_tokens(self, text: str) -> int: ...

    def describe(self) -> dict[str, Any]: ...
