"""Choosing and opening the engine backend from CLI options / settings.

Owns the mapping `--backend local|openai` + `--engine auto|transformers|llamacpp` + options → an
`Engine`, and which adapter a model gets: `--model embedded` loads the shipped security adapter
unless `--adapter none` — when that adapter was trained on the prompt version logwarden sends now
(its training.json says which): an adapter taught another answer shape is applied only when named
with `--adapter`. The engine receives a resolved adapter path (or none) and knows nothing of this
policy. Imports the heavy engine modules lazily so rules-only commands start fast; the llama.cpp
engine never imports torch.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from logwarden.app.config import Settings, declared
from logwarden.engine.api import Engine
from logwarden.errors import ConfigError
from logwarden.prompts import PROMPT_VERSION, USER_LEAD, system_prompt

BACKENDS = ("local", "openai")
SHIPPED_ADAPTERS = Path(__file__).resolve().parent.parent / "adapters"  # package data: one peft folder each
SECURITY_V2 = SHIPPED_ADAPTERS / "security-v2"
DEFAULT_ADAPTERS = {"embedded": SECURITY_V2}  # trained on the embedded 0.5B's weights; other bases get none


@dataclass(slots=True)
class EngineOptions:
    backend: str = "local"
    engine: str = declared("engine")
    model: str = declared("model")
    adapter: str | None = declared("adapter")
    quant: str = declared("quant")
    threads: int | None = declared("threads")
    max_batch: int = declared("max_batch")
    base_urls: Sequence[str] = field(default_factory=tuple)
    api_key_env: str | None = None
    concurrency: int = 8
    max_rps: float | None = None
    timeout_s: float = 120.0
    cache_dir: Path | None = None  # where models are assembled (Settings.model_cache; from_settings sets it)

    @classmethod
    def from_settings(cls, settings: Settings, **overrides) -> EngineOptions:
        """The settings' engine choice, with the options a command was given (None = not given)."""
        options = cls(engine=settings.engine, model=settings.model, adapter=settings.adapter, quant=settings.quant,
                      threads=settings.threads, max_batch=settings.max_batch, cache_dir=settings.model_cache)
        return dataclasses.replace(options, **{k: v for k, v in overrides.items() if v is not None})


def open_engine(options: EngineOptions) -> Engine:
    if options.backend == "local":
        from logwarden.engine.load import load_engine

        engine = load_engine(engine=options.engine, model=options.model, adapter=resolve_adapter(options.model, options.adapter),
                             quant=options.quant, threads=options.threads, max_batch=options.max_batch,
                             cache_dir=options.cache_dir)
        engine.warm_prefix(system_prompt(), USER_LEAD)  # llama.cpp: the system prefix's KV from disk
        return engine
    if options.backend == "openai":
        return _open_openai(options)
    raise ConfigError(f"unknown backend {options.backend!r}; choose one of {', '.join(BACKENDS)}")


def _open_openai(options: EngineOptions) -> Engine:
    from logwarden.engine.openai_backend import OpenAIEngine

    if not options.base_urls:
        raise ConfigError("--backend openai needs at least one --base-url (e.g. http://127.0.0.1:8000/v1)")
    api_key = None
    if options.api_key_env:
        api_key = os.environ.get(options.api_key_env)
        if not api_key:
            raise ConfigError(f"--api-key-env {options.api_key_env}: that environment variable is not set")
    return OpenAIEngine(list(options.base_urls), model=options.model, api_key=api_key,
                        concurrency=options.concurrency, timeout_s=options.timeout_s, max_rps=options.max_rps)


def trained_prompt_version(folder: Path) -> str | None:
    """The prompt version an adapter was trained on (its training card's dataset manifest), if it says."""
    try:
        card = json.loads((folder / "training.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return ((card.get("data") or {}).get("manifest") or {}).get("prompt_version")


def default_adapter(model_spec: str) -> Path | None:
    folder = DEFAULT_ADAPTERS.get(model_spec)
    if folder is None or not (folder / "adapter_config.json").is_file():
        return None
    return folder if trained_prompt_version(folder) == PROMPT_VERSION else None


def resolve_adapter(model_spec: str, adapter: str | None) -> str | None:
    """None → the model's default adapter (if any); "none" → no adapter; else the path as given."""
    if adapter is None:
        folder = default_adapter(model_spec)
        return str(folder) if folder else None
    return None if adapter.strip().lower() == "none" else adapter
