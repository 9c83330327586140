"""Adapters shipped with logwarden, and which one a model gets by default.

Owns: the folder of each shipped peft adapter and the rule "`--model embedded` loads the
security adapter unless `--adapter none`". Knows nothing of loading: `engine.load` asks
`resolve_adapter` and applies what it returns.
"""

from __future__ import annotations

from pathlib import Path

SECURITY_V1 = Path(__file__).resolve().parent / "security-v1"
DEFAULTS = {"embedded": SECURITY_V1}  # trained on the embedded 0.5B's weights; other bases get none


def default_adapter(model_spec: str) -> Path | None:
    folder = DEFAULTS.get(model_spec)
    return folder if folder is not None and (folder / "adapter_config.json").is_file() else None


def resolve_adapter(model_spec: str, adapter: str | None) -> str | None:
    """None → the model's default adapter (if any); "none" → no adapter; else the path as given."""
    if adapter is None:
        folder = default_adapter(model_spec)
        return str(folder) if folder else None
    return None if adapter.strip().lower() == "none" else adapter
