"""The engine's interface, shared by the local transformers backend and the OpenAI-compatible one.

A `Request` is a system prompt (identical across requests, so its KV cache is reused) plus the
user part. `generate` runs a batch; `stream` yields text pieces of one request as they arrive.
Each `Generation` carries its `GenStats`; `ModelUsage` adds them up — the one counter of model work
the review, the stories and a run's metrics keep (it lives here, the lowest floor all of them import).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

MAX_BATCH = 8  # prompts per engine call by default (llama.cpp runs up to 4 of them as parallel slots)

CountTokens = Callable[[str], int]  # an engine's `count_tokens`, or `approx_tokens` where no model is at hand


def approx_tokens(text: str) -> int:
    """About three characters a token (logs are dense in digits and punctuation): for sizing prompts
    where no tokenizer is at hand (rules-only triage, a server without /tokenize, the dataset)."""
    return len(text) // 3 + 1


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
    drafted_tokens: int = 0  # speculative decoding: tokens the draft model proposed (0 = none ran)
    accepted_tokens: int = 0  # of those, the ones the model kept

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class ModelUsage:
    """Model work summed over generations, a stage or a run: `usage.add(stats)` counts one
    generation, `usage += other` adds another counter (the peak memory is the larger of the two)."""

    calls: int = 0  # generations the engine returned
    prompt_tokens: int = 0
    cached_prefix_tokens: int = 0  # of the prompt tokens, those the engine's prefix cache already held
    new_tokens: int = 0
    ttft_s_sum: float = 0.0
    generation_s: float = 0.0
    peak_memory_mb: float = 0.0

    def add(self, stats: GenStats, *, seconds: float | None = None) -> None:
        """One generation; `seconds` is its part of the time (default: its share of its batch's)."""
        self.calls += 1
        self.prompt_tokens += stats.prompt_tokens
        self.cached_prefix_tokens += stats.cached_prefix_tokens
        self.new_tokens += stats.new_tokens
        self.ttft_s_sum += stats.ttft_s
        self.generation_s += stats.total_s / max(stats.batch_size, 1) if seconds is None else seconds
        self.peak_memory_mb = max(self.peak_memory_mb, stats.peak_memory_mb)

    def __iadd__(self, other: ModelUsage) -> ModelUsage:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.cached_prefix_tokens += other.cached_prefix_tokens
        self.new_tokens += other.new_tokens
        self.ttft_s_sum += other.ttft_s_sum
        self.generation_s += other.generation_s
        self.peak_memory_mb = max(self.peak_memory_mb, other.peak_memory_mb)
        return self

    @property
    def tokens(self) -> int:
        """Prompt + new tokens: what a token budget counts."""
        return self.prompt_tokens + self.new_tokens

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Generation:
    text: str
    stats: GenStats
    finished: bool  # the output ended on its own (EOS / grammar closed), not on the token budget
    error: str | None = None


class TextStream:
    """Iterate to get text pieces; once drained, `.generation` holds the full result: the value the
    generator returns. Leaving early closes the generator (an engine frees its slot there)."""

    def __init__(self, pieces: Generator[str, None, Generation]):
        self._pieces = pieces
        self.generation: Generation | None = None

    def __iter__(self) -> Generator[str, None, None]:
        self.generation = yield from self._pieces


Device = Literal["cpu", "cuda", "remote"]  # remote: an OpenAI-compatible server does the work


class Engine(ABC):
    """What every engine offers; callers use this and nothing else (no probing, no setting).

    A subclass implements the four abstract methods (an incomplete one cannot be constructed); the
    rest are no-ops where they mean nothing to it (a server has no prefix cache to warm)."""

    model_name: str
    adapter_name: str | None = None
    adapter_note: str | None = None  # why no adapter runs, as whoever chose it says (the engine runs what it is given)
    device: Device = "cpu"
    max_batch: int = MAX_BATCH  # requests per engine call

    @abstractmethod
    def generate(self, requests: Sequence[Request], *, max_new_tokens: int, schema: dict[str, Any] | None = None,
                 sampling: Sampling = Sampling()) -> list[Generation]: ...

    @abstractmethod
    def stream(self, request: Request, *, max_new_tokens: int, schema: dict[str, Any] | None = None,
               sampling: Sampling = Sampling()) -> TextStream: ...

    @abstractmethod
    def count_tokens(self, text: str) -> int: ...

    @abstractmethod
    def describe(self) -> dict[str, Any]: ...

    def warm_prefix(self, system: str, user_lead: str = "") -> dict[str, Any] | None:
        """Prepare the shared system prefix (llama.cpp: its KV from disk) before the first request;
        what was done, or None where there is nothing to warm."""
        return None

    def fit_batch(self, prompt_tokens: int, new_tokens: int) -> int:
        """The batch this engine will run for prompts of this size (CUDA: what free memory holds)."""
        return self.max_batch

    def cancel(self) -> None:
        """Stop the generations in flight (signal-safe); they return as errors or end early."""

    def close(self) -> None:
        """Free the model and its threads; the engine is not used afterwards."""
