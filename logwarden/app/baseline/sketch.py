"""Small mergeable statistics the profiles are made of: distinct-client support and running moments.

Owns: `Support` — how many distinct clients (addresses, sessions, users, hosts, days) something
was seen from, as a k-minimum-values sketch: exact up to `k`, an estimate beyond, bounded in
memory, and mergeable (the union of two sketches is the sketch of the union), so watchers on
several hosts extend one baseline; `Moments` — count, mean, variance and maximum (Welford,
merged with Chan's parallel formula); and `Age` — events and distinct days, the warm-up of a
log scope or a host. Knows nothing of logs or the store: everything is a plain
JSON-able list.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Iterable
from functools import lru_cache

HASH_SPACE = 2**32
DAY_K = 32  # distinct days an `Age` counts exactly


@lru_cache(maxsize=1 << 14)  # clients, hosts and days repeat line after line
def client_hash(value: str) -> int:
    """A stable 32-bit hash of a client identity (the same on every host and every run)."""
    return int.from_bytes(hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=4).digest(), "big")


class Support:
    """Distinct clients a thing was seen from: the `k` smallest client hashes (KMV sketch)."""

    __slots__ = ("k", "hashes")

    def __init__(self, k: int, hashes: list[int] | None = None):
        self.k = k
        self.hashes = sorted(set(hashes or ()))[:k]

    def add(self, client: int) -> bool:
        """Count `client`; True when it is new to the sketch."""
        hashes = self.hashes
        at = bisect_left(hashes, client)
        if at < len(hashes) and hashes[at] == client:  # seen
            return False
        if len(hashes) >= self.k:
            if at == len(hashes):  # above the k smallest
                return False
            hashes.pop()
        hashes.insert(at, client)
        return True

    def clients(self) -> int:
        """Exact below `k`; the KMV estimate (k-1)/u_k beyond it."""
        if len(self.hashes) < self.k:
            return len(self.hashes)
        return max(self.k, int((self.k - 1) * HASH_SPACE / (self.hashes[-1] + 1)))

    def merge(self, other: Support) -> None:
        self.hashes = sorted(set(self.hashes) | set(other.hashes))[: self.k]

    def to_json(self) -> list[int]:
        return list(self.hashes)

    @classmethod
    def from_json(cls, k: int, data: list[int] | None) -> Support:
        return cls(k, data)


class Moments:
    """Count, mean, M2 (for the variance) and maximum of a stream of numbers."""

    __slots__ = ("n", "mean", "m2", "high")

    def __init__(self, n: int = 0, mean: float = 0.0, m2: float = 0.0, high: float = 0.0):
        self.n, self.mean, self.m2, self.high = n, mean, m2, high

    def add(self, x: float) -> None:
        self.n += 1
        delta = x - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (x - self.mean)
        self.high = max(self.high, x) if self.n > 1 else x

    @property
    def variance(self) -> float:
        return self.m2 / self.n if self.n else 0.0

    def merge(self, other: Moments) -> None:
        if not other.n:
            return
        if not self.n:
            self.n, self.mean, self.m2, self.high = other.n, other.mean, other.m2, other.high
            return
        n = self.n + other.n
        delta = other.mean - self.mean
        self.m2 += other.m2 + delta * delta * self.n * other.n / n
        self.mean += delta * other.n / n
        self.n, self.high = n, max(self.high, other.high)

    def chebyshev_bound(self, x: float) -> float:
        """Chebyshev's bound on P(|X - mean| >= |x - mean|): small means `x` is far out."""
        distance = abs(x - self.mean)
        if distance == 0:
            return 1.0
        return min(1.0, self.variance / (distance * distance))

    def to_json(self) -> list[float]:
        return [self.n, round(self.mean, 6), round(self.m2, 6), self.high]

    @classmethod
    def from_json(cls, data: list[float] | None) -> Moments:
        return cls(*data) if data else cls()


class Age:
    """How long something has been seen — a log scope's lines, a host's events — and on how many
    distinct days: nothing is judged against a history shorter than both thresholds (`warm`)."""

    __slots__ = ("events", "days")

    def __init__(self, events: int = 0, days: Support | None = None):
        self.events, self.days = events, days or Support(DAY_K)

    def warm(self, events: int, days: int) -> bool:
        return self.events >= events and self.days.clients() >= days

    def learn(self, events: int, days: Iterable[int]) -> None:
        self.events += events
        for day in days:
            self.days.add(client_hash(str(day)))

    def merge(self, other: Age) -> None:
        self.events += other.events
        self.days.merge(other.days)

    def weight(self) -> int:
        return self.events

    def to_json(self) -> dict:
        return {"events": self.events, "days": self.days.to_json()}

    @classmethod
    def from_json(cls, data: dict) -> Age:
        return cls(int(data.get("events", 0)), Support.from_json(DAY_K, data.get("days")))
