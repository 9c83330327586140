"""`OpenAIEngine`: the `Engine` interface over one or more OpenAI-compatible servers (vLLM,
SGLang, llama.cpp's llama-server, llama-cpp-python) — how a deployment outgrows one box.

It owns the async client: bounded requests in flight, spreading over base URLs by least
outstanding requests, per-request time-outs, retries with back-off, per-URL circuit breakers, a
token-bucket rate limit, structured-output dialect discovery per URL, and the sync facade the
pipeline calls. A request that cannot be served comes back as a `Generation` with `error` set
and empty text (the pipeline then writes a rules-only record); `generate` never raises for one
request's failure and never drops one.

It knows nothing of logs, prompts' content, storage or the CLI: the caller passes the API key
itself (the CLI reads it from `--api-key-env NAME`) and the JSON schema to enforce.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable, Coroutine, Generator, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from httpx_sse import aconnect_sse

from logwarden.engine.api import Engine, Generation, GenStats, Request, Sampling, TextStream, approx_tokens
from logwarden.engine.openai_resilience import (
    Endpoint,
    EndpointPool,
    backoff_delay,
    make_rate_limiter,
    parse_retry_after,
)
from logwarden.engine.openai_wire import (
    FORMAT_MODES,
    RESPONSE_FORMAT_CHOICES,
    StreamAccumulator,
    StreamFailed,
    chat_body,
    error_message,
)
from logwarden.errors import ConfigError

T = TypeVar("T")
PieceSink = Callable[[str], None]
_END = object()

# a healthy server that does not speak a structured-output dialect answers 400/422 (validation),
# or 500/501 (llama-cpp-python raises on json_schema)
_FORMAT_REJECTION_STATUSES = frozenset({400, 422, 500, 501})
_RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})
_PROBE_POLL_S = 0.1


class _HTTPStatusError(Exception):
    def __init__(self, status: int, message: str, retry_after_s: float | None):
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s


@dataclass
class _Outcome:
    """One attempt's result: a generation, or an error and whether trying again may help."""

    generation: Generation | None = None
    error: str = ""
    retryable: bool = False
    retry_after_s: float | None = None
    immediate: bool = False  # retry at once without spending a retry (format dialect probe)
    unavailable: bool = False  # no endpoint could take it (every breaker open or probing)


class _LoopThread:
    """An event loop on a daemon thread, so the sync facade works from any caller, including
    code that already runs its own loop (Streamlit, Jupyter)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="logwarden-openai", daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.submit(coro).result()

    def stop(self) -> None:
        self.run(self.loop.shutdown_asyncgens())  # close half-read SSE iterators before the loop
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


class OpenAIEngine(Engine):
    """The `Engine` contract over OpenAI-compatible chat completions (streamed, schema-bound)."""

    device = "remote"

    def __init__(self, base_urls: Sequence[str], *, model: str, api_key: str | None = None,
                 concurrency: int = 8, timeout_s: float = 120.0, max_retries: int = 4,
                 max_rps: float | None = None, response_format: str = "auto",
                 breaker_threshold: int = 5, breaker_cooldown_s: float = 10.0,
                 backoff_base_s: float = 0.5, backoff_cap_s: float = 20.0):
        _validate_options(base_urls, model=model, concurrency=concurrency, timeout_s=timeout_s,
                          max_retries=max_retries, max_rps=max_rps, response_format=response_format)
        self.model_name = model
        self.base_urls = [url.rstrip("/") for url in base_urls]
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.max_rps = max_rps
        self.response_format = response_format
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self._format_modes = FORMAT_MODES if response_format == "auto" else (response_format,)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.pool = EndpointPool.build(self.base_urls, threshold=breaker_threshold,
                                       cooldown_s=breaker_cooldown_s)
        self._tokenize_supported: bool | None = None
        self._runner = _LoopThread()
        self._runner.run(self._start())

    async def _start(self) -> None:
        # created inside the loop that will use them
        self._semaphore = asyncio.Semaphore(self.concurrency)
        self._limiter = make_rate_limiter(self.max_rps)
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)),
            limits=httpx.Limits(max_connections=self.concurrency * len(self.base_urls) + 4),
        )

    # ---- the Engine protocol -------------------------------------------------------------

    def generate(self, requests: Sequence[Request], *, max_new_tokens: int, schema: dict | None = None,
                 sampling: Sampling = Sampling()) -> list[Generation]:
        """All requests concurrently (at most `concurrency` in flight); results in request order."""
        return self._runner.run(self._generate_all(list(requests), schema, max_new_tokens, sampling))

    def stream(self, request: Request, *, max_new_tokens: int, schema: dict | None = None,
               sampling: Sampling = Sampling()) -> TextStream:
        """Text pieces as the server sends them; `.generation` is set once the stream is drained."""
        pieces: queue.Queue[object] = queue.Queue()
        future = self._runner.submit(
            self._stream_one(request, schema, max_new_tokens, sampling, pieces))
        return TextStream(self._drain(pieces, future))

    def count_tokens(self, text: str) -> int:
        """The server's own count (`/tokenize` of llama-server and vLLM); servers without that
        endpoint get `approx_tokens`."""
        if self._tokenize_supported is not False:
            count = self._runner.run(self._tokenize_count(text))
            if count is not None:
                return count
        return approx_tokens(text) if text else 0

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "openai", "model": self.model_name, "base_urls": list(self.base_urls),
            "concurrency": self.concurrency, "timeout_s": self.timeout_s,
            "max_retries": self.max_retries, "max_rps": self.max_rps,
            "response_format": self.response_format,
            "endpoints": [e.snapshot(self._format_modes) for e in self.pool.endpoints],
        }

    def close(self) -> None:
        self._runner.run(self._client.aclose())
        self._runner.stop()

    def __enter__(self) -> OpenAIEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- async core ----------------------------------------------------------------------

    async def _generate_all(self, requests: list[Request], schema: dict | None, max_new_tokens: int,
                            sampling: Sampling) -> list[Generation]:
        jobs = [self._serve(r, schema, max_new_tokens, sampling, None) for r in requests]
        return list(await asyncio.gather(*jobs))  # gather keeps request order

    async def _stream_one(self, request: Request, schema: dict | None, max_new_tokens: int,
                          sampling: Sampling, pieces: queue.Queue[object]) -> Generation:
        try:
            return await self._serve(request, schema, max_new_tokens, sampling, pieces.put)
        finally:
            pieces.put(_END)

    @staticmethod
    def _drain(pieces: queue.Queue[object],
               future: concurrent.futures.Future[Generation]) -> Generator[str, None, Generation]:
        try:
            while (piece := pieces.get()) is not _END:
                yield str(piece)
            return future.result()
        finally:
            future.cancel()  # the consumer stopped early: free the server slot

    async def _serve(self, request: Request, schema: dict | None, max_new_tokens: int,
                     sampling: Sampling, on_piece: PieceSink | None) -> Generation:
        """One request to completion or to a final error; never raises (except cancellation)."""
        retries_used = 0
        probes_left = 2 * len(self._format_modes)  # bounded even if concurrent probes interleave
        while True:
            outcome = await self._attempt_guarded(request, schema, max_new_tokens, sampling, on_piece)
            if outcome.generation is not None:
                return outcome.generation
            if outcome.immediate and probes_left > 0:
                probes_left -= 1
                continue
            if outcome.unavailable and self.pool.probing():
                # a half-open probe is deciding whether the server is back: wait for its verdict
                # instead of burning retries (it arrives with the probe's response headers)
                await asyncio.sleep(_PROBE_POLL_S)
                continue
            if not outcome.retryable or retries_used >= self.max_retries:
                return self._failed(outcome.error, attempts=retries_used + 1)
            await asyncio.sleep(backoff_delay(retries_used, base_s=self.backoff_base_s,
                                              cap_s=self.backoff_cap_s,
                                              retry_after_s=outcome.retry_after_s))
            retries_used += 1

    async def _attempt_guarded(self, request: Request, schema: dict | None, max_new_tokens: int,
                               sampling: Sampling, on_piece: PieceSink | None) -> _Outcome:
        try:
            return await self._attempt(request, schema, max_new_tokens, sampling, on_piece)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug or an odd server must not lose the request
            return _Outcome(error=f"unexpected {type(exc).__name__}: {exc}")

    async def _attempt(self, request: Request, schema: dict | None, max_new_tokens: int,
                       sampling: Sampling, on_piece: PieceSink | None) -> _Outcome:
        async with self._semaphore:
            if self._limiter is not None:
                await self._limiter.acquire()
            endpoint = self.pool.acquire()
            if endpoint is None:
                # back off rather than fail at once: a cool-down ends in a half-open probe, so a
                # short outage (a replica restarting) is ridden out within the retry budget
                return _Outcome(error=self._all_down_message(), retryable=True, unavailable=True)
            return await self._send(endpoint, request, schema, max_new_tokens, sampling, on_piece)

    async def _send(self, endpoint: Endpoint, request: Request, schema: dict | None,
                    max_new_tokens: int, sampling: Sampling, on_piece: PieceSink | None) -> _Outcome:
        schema = request.schema or schema
        mode = self._mode_for(endpoint, schema)
        body = chat_body(request, model=self.model_name, schema=schema, mode=mode,
                         max_new_tokens=max_new_tokens, sampling=sampling)
        accumulator = StreamAccumulator()
        verdict: bool | None = None
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._post_stream(endpoint, body, accumulator, on_piece)
            verdict = True
            if mode is not None:
                endpoint.format_confirmed = True
            return _Outcome(generation=Generation(
                text=accumulator.text, finished=accumulator.finished,
                stats=accumulator.stats(model=self.model_name, device=endpoint.base_url)))
        except _HTTPStatusError as exc:
            verdict, outcome = self._on_status(endpoint, mode, exc)
            return outcome
        except (httpx.TransportError, TimeoutError, StreamFailed, ValueError) as exc:
            verdict = False
            return self._on_broken(endpoint, exc, streamed=bool(on_piece and accumulator.pieces))
        finally:
            self.pool.release(endpoint, ok=verdict)

    async def _post_stream(self, endpoint: Endpoint, body: dict[str, Any],
                           accumulator: StreamAccumulator, on_piece: PieceSink | None) -> None:
        url = f"{endpoint.base_url}/chat/completions"
        async with aconnect_sse(self._client, "POST", url, json=body, headers=dict(self._headers)) as source:
            response = source.response
            if response.status_code != 200:
                raw = await response.aread()
                raise _HTTPStatusError(response.status_code, error_message(raw, response.status_code),
                                       parse_retry_after(response.headers.get("retry-after")))
            # the server is up and took the request: close its breaker now, not after the
            # whole generation, so requests held back by a half-open probe go at once
            self.pool.mark_alive(endpoint)
            async with aclosing(source.aiter_sse()) as events:  # closed now, also on break
                async for event in events:
                    piece = accumulator.feed(event.data)
                    if piece and on_piece is not None:
                        on_piece(piece)
                    if accumulator.done:
                        break
        if accumulator.finish_reason is None:
            raise StreamFailed("the stream ended before the answer did (server went away?)")

    # ---- decisions -----------------------------------------------------------------------

    def _mode_for(self, endpoint: Endpoint, schema: dict | None) -> str | None:
        if schema is None or self.response_format == "none":
            return None
        return self._format_modes[endpoint.format_index]

    def _on_status(self, endpoint: Endpoint, mode: str | None,
                   exc: _HTTPStatusError) -> tuple[bool | None, _Outcome]:
        """(breaker verdict, outcome) for an HTTP error answer."""
        where = f"{endpoint.base_url}: {exc}"
        if mode is not None and not endpoint.format_confirmed and exc.status in _FORMAT_REJECTION_STATUSES:
            return self._on_format_rejected(endpoint, mode, exc)
        if exc.status in _RETRYABLE_STATUSES or exc.status >= 500:
            return False, _Outcome(error=where, retryable=True, retry_after_s=exc.retry_after_s)
        # 4xx: the server is fine, the request is not; sending it again will not help
        return None, _Outcome(error=f"{where} (check --model and the server's options)")

    def _on_format_rejected(self, endpoint: Endpoint, mode: str,
                            exc: _HTTPStatusError) -> tuple[bool | None, _Outcome]:
        if endpoint.format_index == self._format_modes.index(mode):  # others may have moved on
            endpoint.format_index += 1
        if endpoint.format_index < len(self._format_modes):
            return None, _Outcome(error=str(exc), immediate=True)
        endpoint.format_index = 0  # a crashing server is not proof that it lacks every dialect
        message = (f"{endpoint.base_url} refused every structured-output dialect "
                   f"({', '.join(self._format_modes)}); last answer {exc}. Start the server with "
                   "JSON-schema support, or use response_format='none' to rely on validation only")
        if exc.status >= 500:
            return False, _Outcome(error=message, retryable=True, retry_after_s=exc.retry_after_s)
        return None, _Outcome(error=message)

    def _on_broken(self, endpoint: Endpoint, exc: Exception, *, streamed: bool) -> _Outcome:
        kind = "timed out" if isinstance(exc, TimeoutError) else type(exc).__name__
        error = f"{endpoint.base_url}: {kind}: {exc}".rstrip(": ")
        if streamed:  # pieces already reached the reader: a retry would repeat them
            return _Outcome(error=f"{error} (stream interrupted after partial output)")
        return _Outcome(error=error, retryable=True)

    def _all_down_message(self) -> str:
        return (f"all {len(self.base_urls)} server(s) unavailable (circuit open after repeated "
                f"failures): {', '.join(self.base_urls)}; check that they run and are reachable")

    def _failed(self, error: str, *, attempts: int) -> Generation:
        stats = GenStats(model=self.model_name, device="openai", attention="server", quant="server")
        return Generation(text="", stats=stats, finished=False,
                          error=f"{error} [after {attempts} attempt(s)]")

    # ---- token counting ------------------------------------------------------------------

    async def _tokenize_count(self, text: str) -> int | None:
        """POST <server root>/tokenize: llama-server reads `content`, vLLM reads `prompt`."""
        root = self.base_urls[0].removesuffix("/v1")
        body = {"model": self.model_name, "prompt": text, "content": text, "add_special_tokens": False}
        try:
            response = await self._client.post(f"{root}/tokenize", json=body, headers=self._headers)
            payload = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        count = _token_count(payload)
        self._tokenize_supported = count is not None
        return count


def _token_count(payload: Any) -> int | None:
    if not isinstance(payload, dict):
        return None
    if isinstance(payload.get("count"), int):
        return payload["count"]
    if isinstance(payload.get("tokens"), list):
        return len(payload["tokens"])
    return None


def _validate_options(base_urls: Sequence[str], *, model: str, concurrency: int, timeout_s: float,
                      max_retries: int, max_rps: float | None, response_format: str) -> None:
    if isinstance(base_urls, str) or not base_urls:
        raise ConfigError("give at least one --base-url, e.g. http://127.0.0.1:8000/v1 "
                          "(repeat the option for several replicas)")
    for url in base_urls:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"--base-url {url!r} must start with http:// or https:// "
                              "(e.g. http://127.0.0.1:8000/v1)")
    if not model:
        raise ConfigError("--model is required with --backend openai: the name the server serves "
                          "(see GET <base-url>/models)")
    if concurrency < 1 or timeout_s <= 0 or max_retries < 0 or (max_rps is not None and max_rps <= 0):
        raise ConfigError("--concurrency must be >= 1, the timeout > 0, retries >= 0 and "
                          "--max-rps > 0 when given")
    if response_format not in RESPONSE_FORMAT_CHOICES:
        raise ConfigError(f"response_format must be one of {', '.join(RESPONSE_FORMAT_CHOICES)}, "
                          f"not {response_format!r}")
