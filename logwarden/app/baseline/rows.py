"""The rows a baseline is kept in: (kind, scope, key) → one profile, stored as JSON.

Owns the `Profile` protocol every row class keeps (merge, weight, to_json, from_json), the kinds
(`PROFILES`: kind → its class; a scope's summary row of templates and entities has key ""), and
reading a stored or exported row (`load`, through `legacy.upgrade` for rows written before the
readable keys). Knows nothing of SQL or of how profiles learn.
"""

from __future__ import annotations

from typing import Any, Protocol, Self

from logwarden.app.baseline.entities import EntityStats
from logwarden.app.baseline.legacy import upgrade
from logwarden.app.baseline.sketch import Age
from logwarden.app.baseline.templates import TemplateStats
from logwarden.app.baseline.web import EndpointProfile, SiteProfile


class Profile(Protocol):
    """One row's profile: what a run learns into it merges into the stored one (and back)."""

    def merge(self, other: Self) -> None: ...

    def weight(self) -> int:
        """What a scope over its row cap keeps rows by (distinct clients or hosts; the store's `clients`)."""
        ...

    def to_json(self) -> dict[str, Any]: ...

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self: ...


PROFILES: dict[str, type[Profile]] = {
    "web-site": SiteProfile, "web": EndpointProfile,
    "template-scope": Age, "template": TemplateStats,
    "host": Age, "entity": EntityStats,
}


def new(kind: str) -> Profile:
    return PROFILES[kind]()


def load(kind: str, data: Any) -> Profile:
    """A stored or exported row's profile (KeyError for an unknown kind; TypeError, KeyError,
    ValueError or AttributeError for data that is not such a profile)."""
    return PROFILES[kind].from_json(upgrade(kind, data))
