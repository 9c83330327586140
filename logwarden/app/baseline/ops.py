"""What learning one request changes in a web profile, as values: decided once on the profile a
run reads, then applied both to it and to the delta that `flush` merges into the store (the two
must change alike, so the decision is not taken twice). `SiteProfile.apply` and
`EndpointProfile.apply` dispatch on these with `match`. Knows nothing of requests or the store.
"""

from __future__ import annotations

from dataclasses import dataclass

from logwarden.app.baseline.values import Value


@dataclass(frozen=True, slots=True)
class Count:
    """A request from `client`, carrying the parameter `names` (a site counts no names)."""

    client: int
    names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Pend:
    """`name` (an endpoint of a site, a parameter of an endpoint) seen from `client` in a request
    that deviated: it waits until enough clients show it."""

    name: str
    client: int


@dataclass(frozen=True, slots=True)
class Promote:
    """A pending `name` becomes usual, starting with the `clients` that used it (sites keep none)."""

    name: str
    clients: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class LearnValue:
    """A parameter's value, learned into its value model."""

    name: str
    value: Value
    client: int


@dataclass(frozen=True, slots=True)
class Single:
    """An endpoint got its first request (+1: a singleton) or its second (-1: no longer one)."""

    change: int


Op = Count | Pend | Promote | LearnValue | Single
