"""Staying up when servers do not: per-URL circuit breakers, least-outstanding spreading, retry
back-off with jitter (honouring Retry-After) and a token-bucket request rate limit.

It owns the bookkeeping of *which* base URL a request goes to and *when* it may be (re)sent. It
knows nothing of HTTP bodies, chat messages, schemas or SSE (see `openai_wire`), and nothing of
logs. The retry loop itself lives in `openai_backend`, because it interleaves endpoint choice
with these states; a generic retry library (tenacity) would have to be told all of that anyway.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Literal

from aiolimiter import AsyncLimiter

BreakerState = Literal["closed", "open", "half_open"]
Clock = Callable[[], float]


class CircuitBreaker:
    """Opens after `threshold` consecutive failures; after `cooldown_s` lets one probe through
    (half-open); the probe's success closes it, its failure opens it again for another cool-down.

    Why: a dead replica would otherwise eat every request's retries and time-outs while healthy
    replicas sit idle; an open breaker makes the pool skip it at no cost.
    """

    def __init__(self, *, threshold: int = 5, cooldown_s: float = 10.0, clock: Clock = time.monotonic):
        self.threshold = threshold
        self.cooldown_s = cooldown_s
        self._clock = clock
        self.consecutive_failures = 0
        self._opened_at: float | None = None
        self._probe_in_flight = False

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self.cooldown_s:
            return "half_open"
        return "open"

    @property
    def probe_in_flight(self) -> bool:
        return self._probe_in_flight

    def can_send(self) -> bool:
        state = self.state
        return state == "closed" or (state == "half_open" and not self._probe_in_flight)

    def on_send(self) -> None:
        if self.state == "half_open":
            self._probe_in_flight = True

    def on_success(self) -> None:
        self.consecutive_failures = 0
        self._opened_at = None
        self._probe_in_flight = False

    def on_failure(self) -> None:
        self.consecutive_failures += 1
        was_probe = self._probe_in_flight
        self._probe_in_flight = False
        if was_probe or self.consecutive_failures >= self.threshold:
            self._opened_at = self._clock()

    def on_abandoned(self) -> None:
        """A request ended without a verdict on the server (e.g. cancelled by the caller)."""
        self._probe_in_flight = False


@dataclass
class Endpoint:
    """One base URL with its live counters. `format_mode` is the structured-output dialect this
    server accepted (None until a schema-constrained request succeeded there)."""

    base_url: str
    breaker: CircuitBreaker
    outstanding: int = 0
    sent: int = 0
    succeeded: int = 0
    failed: int = 0
    format_index: int = 0
    format_confirmed: bool = False

    def snapshot(self, format_modes: Sequence[str]) -> dict:
        return {
            "base_url": self.base_url, "breaker": self.breaker.state, "outstanding": self.outstanding,
            "sent": self.sent, "succeeded": self.succeeded, "failed": self.failed,
            "response_format": format_modes[self.format_index] if self.format_index < len(format_modes) else None,
            "response_format_confirmed": self.format_confirmed,
        }


@dataclass
class EndpointPool:
    """Picks the endpoint with the fewest outstanding requests among those whose breaker lets a
    request through; ties rotate so that an idle pool still spreads over every URL."""

    endpoints: list[Endpoint]
    _rotation: int = field(default=0)

    @classmethod
    def build(cls, base_urls: Sequence[str], *, threshold: int, cooldown_s: float,
              clock: Clock = time.monotonic) -> EndpointPool:
        return cls([Endpoint(url, CircuitBreaker(threshold=threshold, cooldown_s=cooldown_s, clock=clock))
                    for url in base_urls])

    def acquire(self) -> Endpoint | None:
        """The chosen endpoint with its counters bumped, or None when every breaker is open."""
        candidates = [e for e in self._rotated() if e.breaker.can_send()]
        if not candidates:
            return None
        chosen = min(candidates, key=lambda e: e.outstanding)  # min keeps the first of ties
        self._rotation += 1
        chosen.breaker.on_send()
        chosen.outstanding += 1
        chosen.sent += 1
        return chosen

    def probing(self) -> bool:
        """Some endpoint is half-open with its probe request still in flight."""
        return any(e.breaker.probe_in_flight for e in self.endpoints)

    def mark_alive(self, endpoint: Endpoint) -> None:
        """The server answered 200 to a request still in progress."""
        endpoint.breaker.on_success()

    def release(self, endpoint: Endpoint, *, ok: bool | None) -> None:
        """ok=True success, False server/connection failure, None no verdict (client-side)."""
        endpoint.outstanding -= 1
        if ok is True:
            endpoint.succeeded += 1
            endpoint.breaker.on_success()
        elif ok is False:
            endpoint.failed += 1
            endpoint.breaker.on_failure()
        else:
            endpoint.breaker.on_abandoned()

    def _rotated(self) -> list[Endpoint]:
        start = self._rotation % len(self.endpoints)
        return self.endpoints[start:] + self.endpoints[:start]


def backoff_delay(attempt: int, *, base_s: float = 0.5, cap_s: float = 20.0,
                  retry_after_s: float | None = None, retry_after_cap_s: float = 120.0,
                  rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number `attempt` (0-based): "full jitter" exponential
    back-off (uniform in [0, min(cap, base·2^attempt)]), so that many clients that failed
    together do not retry together. A server's Retry-After wins, capped so a bad header cannot
    park a run for hours."""
    if retry_after_s is not None:
        return min(max(retry_after_s, 0.0), retry_after_cap_s)
    ceiling = min(cap_s, base_s * (2 ** attempt))
    return (rng or random).uniform(0.0, ceiling)


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Retry-After is either delta-seconds or an HTTP date (RFC 9110 §10.2.3)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(when - (time.time() if now is None else now), 0.0)


def make_rate_limiter(max_rps: float | None) -> AsyncLimiter | None:
    """A token bucket of `max_rps` tokens per second with a burst of ceil(max_rps) (at least 1).

    aiolimiter's bucket holds `max_rate` tokens per `time_period`; expressing a fractional rate
    as ceil(r) tokens per ceil(r)/r seconds keeps the long-run rate exact.
    """
    if max_rps is None:
        return None
    burst = max(1, math.ceil(max_rps))
    return AsyncLimiter(burst, burst / max_rps)
