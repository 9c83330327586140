"""The OpenAI-compatible wire format: chat-completion request bodies (with the structured-output
dialect each server family understands) and the reading of a streamed (SSE) answer into text,
finish reason, usage and timing.

It owns JSON shapes only. It knows nothing of sockets, retries or which URL is healthy
(`openai_resilience`, `openai_backend`), and nothing of logs or of what the schema means.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from logwarden.engine.api import GenStats, Request, Sampling

# Structured-output dialects, tried in this order under response_format="auto":
# OpenAI/vLLM/SGLang/llama-server accept json_schema; llama-cpp-python's server answers it with
# HTTP 500 but takes json_object + schema; older vLLM only knows the guided_json extra field.
FORMAT_MODES: tuple[str, ...] = ("json_schema", "json_object", "guided_json")
RESPONSE_FORMAT_CHOICES: tuple[str, ...] = ("auto", *FORMAT_MODES, "none")


def messages_for(request: Request) -> list[dict[str, str]]:
    """[system, user]: the system prompt is the same for every window, so servers with prefix
    caching (vLLM, SGLang, llama-server's per-slot cache) compute its KV once."""
    return [{"role": "system", "content": request.system}, {"role": "user", "content": request.user}]


def structured_output_fields(schema: dict, mode: str) -> dict[str, Any]:
    """The body fields that constrain the answer to `schema` in the given dialect."""
    if mode == "json_schema":
        name = str(schema.get("title") or "response")
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": name, "schema": schema, "strict": True}}}
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if mode == "guided_json":
        return {"guided_json": schema}
    return {}


def sampling_fields(sampling: Sampling) -> dict[str, Any]:
    fields: dict[str, Any] = {"temperature": sampling.temperature, "top_p": sampling.top_p}
    if sampling.seed is not None:
        fields["seed"] = sampling.seed
    if sampling.repetition_penalty != 1.0:
        # not in the OpenAI spec: vLLM/SGLang name it repetition_penalty, llama.cpp repeat_penalty;
        # each ignores the other's name, so only sent when asked for
        fields["repetition_penalty"] = sampling.repetition_penalty
        fields["repeat_penalty"] = sampling.repetition_penalty
    return fields


def chat_body(request: Request, *, model: str, schema: dict | None, mode: str | None,
              max_new_tokens: int, sampling: Sampling) -> dict[str, Any]:
    """A streaming chat-completions body; usage is asked for so that token counts come from
    the server's own tokenizer."""
    body: dict[str, Any] = {
        "model": model,
        "messages": messages_for(request),
        "max_tokens": max_new_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
        **sampling_fields(sampling),
    }
    if schema is not None and mode is not None:
        body.update(structured_output_fields(schema, mode))
    return body


class StreamFailed(Exception):
    """The server reported an error inside an already-started stream."""


@dataclass
class StreamAccumulator:
    """Folds SSE `data:` payloads of one chat completion into text, finish reason and usage."""

    started_at: float = field(default_factory=time.perf_counter)
    pieces: list[str] = field(default_factory=list)
    first_piece_at: float | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    done: bool = False

    def feed(self, data: str) -> str | None:
        """Consume one event's data; return the new text piece, if any."""
        if data.strip() == "[DONE]":
            self.done = True
            return None
        payload = json.loads(data)
        if "error" in payload:
            raise StreamFailed(_error_text(payload["error"]))
        if payload.get("usage"):
            self.usage = payload["usage"]
        return self._take_choice(payload.get("choices") or [])

    def _take_choice(self, choices: list[dict[str, Any]]) -> str | None:
        if not choices:
            return None
        choice = choices[0]
        self.finish_reason = choice.get("finish_reason") or self.finish_reason
        piece = (choice.get("delta") or {}).get("content")
        if not piece:
            return None
        if self.first_piece_at is None:
            self.first_piece_at = time.perf_counter()
        self.pieces.append(piece)
        return piece

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def finished(self) -> bool:
        """Ended on its own (stop/EOS), not cut by max_tokens."""
        return self.finish_reason == "stop"

    def stats(self, *, model: str, device: str) -> GenStats:
        total = time.perf_counter() - self.started_at
        usage = self.usage or {}
        new_tokens = int(usage.get("completion_tokens") or len(self.pieces))
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        ttft = (self.first_piece_at - self.started_at) if self.first_piece_at else total
        return GenStats(
            prompt_tokens=int(usage.get("prompt_tokens") or 0), cached_prefix_tokens=int(cached),
            new_tokens=new_tokens, ttft_s=ttft, total_s=total,
            tokens_per_s=new_tokens / total if total > 0 else 0.0,
            batch_size=1, attention="server", quant="server", device=device, model=model,
        )


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)


def error_message(body: bytes, status: int) -> str:
    """A short message from an error response (OpenAI shape `{"error": {"message": ...}}`)."""
    text = body.decode("utf-8", "replace")
    try:
        payload = json.loads(text)
        if isinstance(payload, dict) and "error" in payload:
            return f"HTTP {status}: {_error_text(payload['error'])}"[:500]
        if isinstance(payload, dict) and "detail" in payload:  # FastAPI-based servers
            return f"HTTP {status}: {payload['detail']}"[:500]
    except ValueError:
        pass
    return f"HTTP {status}: {text.strip()}"[:500]
