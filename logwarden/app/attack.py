"""The shipped MITRE ATT&CK (Enterprise) table: technique id → display name and tactics.

Owns reading `logwarden/data/attack_techniques.json` (once, cached) and turning an entry into the
schema's `Technique`. Sub-techniques are shown the way analysts read them, "Parent: Sub"
(e.g. "Brute Force: Password Spraying"). It knows nothing about rules, records or the model; an id
it does not know (or a malformed one the model made up) gives None rather than a guessed name.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from logwarden.errors import ConfigError
from logwarden.schemas import Technique

_ID = re.compile(r"^T\d{4}(?:\.\d{3})?$")
_TACTIC_MAX = 100  # Technique.tactic max_length


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    path = resources.files("logwarden") / "data" / "attack_techniques.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"the ATT&CK table {path} is missing or corrupt ({exc}); reinstall logwarden") from exc


def normalize_id(technique_id: str) -> str:
    """'t1110.001 ' → 'T1110.001' (ids arrive from rules, the model and users in any case)."""
    return technique_id.strip().upper()


def is_known(technique_id: str) -> bool:
    return normalize_id(technique_id) in _table()["techniques"]


def display_name(technique_id: str) -> str | None:
    """"Brute Force: Password Spraying" for a sub-technique, the plain name otherwise."""
    techniques = _table()["techniques"]
    tid = normalize_id(technique_id)
    entry = techniques.get(tid)
    if entry is None:
        return None
    parent = techniques.get(tid.split(".")[0]) if "." in tid else None
    return f"{parent['name']}: {entry['name']}" if parent else entry["name"]


def own_name(technique_id: str) -> str | None:
    """The table's own name: "Password Spraying" for T1110.003 (no parent), None if unknown."""
    entry = _table()["techniques"].get(normalize_id(technique_id))
    return entry["name"] if entry else None


def tactic_id(tactic_name: str) -> str | None:
    """'Credential Access' → 'TA0006'; None for a name ATT&CK does not have."""
    wanted = tactic_name.strip().casefold()
    return next((t["id"] for t in _table()["tactics"].values() if t["name"].casefold() == wanted), None)


def tactics(technique_id: str) -> list[str]:
    """Tactic names in ATT&CK's order for the technique (e.g. ['Credential Access'])."""
    table = _table()
    entry = table["techniques"].get(normalize_id(technique_id))
    if entry is None:
        return []
    return [table["tactics"][t]["name"] for t in entry["tactics"]]


def lookup(technique_id: str) -> Technique | None:
    """The schema `Technique` (id, "Parent: Sub" name, comma-joined tactics), or None if unknown."""
    tid = normalize_id(technique_id)
    if not _ID.match(tid):
        return None
    name = display_name(tid)
    if name is None:
        return None
    return Technique(id=tid, name=name[:200], tactic=", ".join(tactics(tid))[:_TACTIC_MAX])


def all_ids() -> list[str]:
    return list(_table()["techniques"])
