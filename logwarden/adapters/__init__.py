"""Adapters shipped with logwarden, and which one a model gets by default.

Owns: the folder of each shipped peft adapter and the rule "`--model embedded` loads the
security adapter unless `--adapter none`" — when that adapter was trained on the prompt version
logwarden sends now (its training.json says which): an adapter taught another answer shape is
not applied by default, only when named with `--adapter`.
Knows nothing of loading: `engine.load` asks `resolve_adapter` and applies what it returns.
"""

from __future__ import annotations

import json
from pathlib import Path

from logwarden.prompts import PROMPT_VERSION

SECURITY_V2 = Path(__file__).resolve().parent / "security-v2"
DEFAULTS = {"embedded": SECURITY_V2}  # trained on the embedded 0.5B's weights; other bases get none


def trained_prompt_version(folder: Path) -> str | None:
    """The prompt version an adapter was trained on (its training card's dataset manifest), if it says."""
    try:
        card = json.loads((folder / "training.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return ((card.get("data") or {}).get("manifest") or {}).get("prompt_version")


def default_adapter(model_spec: str) -> Path | None:
    folder = DEFAULTS.get(model_spec)
    if folder is None or not (folder / "adapter_config.json").is_file():
        return None
    return folder if trained_prompt_version(folder) == PROMPT_VERSION else None


def resolve_adapter(model_spec: str, adapter: str | None) -> str | None:
    """None → the model's default adapter (if any); "none" → no adapter; else the path as given."""
    if adapter is None:
        folder = default_adapter(model_spec)
        return str(folder) if folder else None
    return None if adapter.strip().lower() == "none" else adapter
