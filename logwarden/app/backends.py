"""Choosing and opening the engine backend from CLI options / settings.

Owns the mapping `--backend local|openai` + `--engine auto|transformers|llamacpp` + options → an
`Engine`. Imports the heavy engine modules lazily so rules-only commands start fast; the llama.cpp
engine never imports torch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from logwarden.errors import ConfigError
from logwarden.engine.api import Engine

BACKENDS = ("local", "openai")
ENGINES = ("auto", "transformers", "llamacpp")  # the local backend's engines (engine/load.py chooses for auto)


@dataclass(slots=True)
class EngineOptions:
    backend: str = "local"
    engine: str = "auto"
    model: str = "embedded"
    adapter: str | None = None
    quant: str = "auto"
    threads: int | None = None
    max_batch: int = 8
    base_urls: Sequence[str] = field(default_factory=tuple)
    api_key_env: str | None = None
    concurrency: int = 8
    max_rps: float | None = None
    timeout_s: float = 120.0


def open_engine(options: EngineOptions) -> Engine:
    if options.backend == "local":
        from logwarden.app.config import get_settings
        from logwarden.engine.load import load_engine

        engine = load_engine(engine=options.engine, model=options.model, adapter=options.adapter,
                             quant=options.quant, threads=options.threads, max_batch=options.max_batch,
                             cache_dir=get_settings().model_cache)
        if hasattr(engine, "warm_prefix"):  # llama.cpp: the system prefix's KV from disk, not prefilled per process
            from logwarden.prompts import USER_LEAD, system_prompt

            engine.warm_prefix(system_prompt(), USER_LEAD)
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
