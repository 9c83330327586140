"""Choosing and opening the engine backend from CLI options / settings.

Owns the mapping `--backend local|openai` + `--engine auto|transformers|llamacpp` + options → an
`Engine`, and which adapter a model gets: `--model embedded` loads the shipped security adapter
unless `--adapter none` — when that adapter was trained on the prompt version logwarden sends now
(its training.json says which): an adapter taught another answer shape is applied only when named
with `--adapter` (today security-v2 speaks analyze_v2, so none runs by default). The engine
receives a resolved adapter path (or none) and the reason for none, and knows nothing of this
policy. The model facts every summary states (name, quantisation, adapter or why none) are built
here (`model_facts`; a stored record's from its run: `record_model_facts`). Imports the heavy engine modules lazily so rules-only commands start fast; the llama.cpp
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
    draft_model: str | None = declared("draft_model")
    draft_tokens: int = declared("draft_tokens")
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
                      threads=settings.threads, max_batch=settings.max_batch, cache_dir=settings.model_cache,
                      draft_model=settings.draft_model, draft_tokens=settings.draft_tokens)
        return dataclasses.replace(options, **{k: v for k, v in overrides.items() if v is not None})


def open_engine(options: EngineOptions) -> Engine:
    if options.backend == "local":
        from logwarden.engine.load import load_engine

        adapter, why_none = choose_adapter(options.model, options.adapter)
        engine = load_engine(engine=options.engine, model=options.model, adapter=adapter,
                             quant=options.quant, threads=options.threads, max_batch=options.max_batch,
                             cache_dir=options.cache_dir, draft_model=options.draft_model,
                             draft_tokens=options.draft_tokens)
        engine.adapter_note = why_none
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
    engine = OpenAIEngine(list(options.base_urls), model=options.model, api_key=api_key,
                          concurrency=options.concurrency, timeout_s=options.timeout_s, max_rps=options.max_rps)
    engine.adapter_note = "the server runs its own weights (logwarden adds no adapter)"
    return engine


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
    return choose_adapter(model_spec, adapter)[0]


def choose_adapter(model_spec: str, adapter: str | None) -> tuple[str | None, str | None]:
    """(the adapter path the engine gets, or None; why none, when none)."""
    if adapter is not None:
        if adapter.strip().lower() == "none":
            return None, "--adapter none"
        return adapter, None
    folder = default_adapter(model_spec)
    if folder is not None:
        return str(folder), None
    shipped = DEFAULT_ADAPTERS.get(model_spec)
    if shipped is None:
        return None, f"no shipped adapter for --model {model_spec} (--adapter PATH adds one)"
    trained = trained_prompt_version(shipped) if (shipped / "adapter_config.json").is_file() else None
    if trained is None:
        return None, f"the shipped {shipped.name} is not installed"
    return None, (f"the shipped {shipped.name} was trained on prompt {trained}, logwarden sends {PROMPT_VERSION} "
                  f"(--adapter {shipped} applies it anyway)")


def model_facts(engine: Engine | None) -> dict[str, str | None]:
    """Which model runs, as every summary states it: name, quantisation, adapter or why none."""
    if engine is None:
        return {"model": None, "quant": None, "adapter": None, "adapter_note": "rules only: no model runs"}
    quant = engine.describe().get("quant")
    return {"model": engine.model_name, "quant": str(quant) if quant is not None else None,
            "adapter": engine.adapter_name, "adapter_note": None if engine.adapter_name else
            (engine.adapter_note or "none given")}


def record_model_facts(record, run_config: dict | None) -> dict[str, str | None]:
    """Which model made a stored record: its run's model facts; for a rules' record, that no model
    decided it; for a run from before they were stored, what the record itself kept."""
    if record.model is None:
        ran = (run_config or {}).get("model_facts") or {}
        note = "decided by the rules" + (f"; the run's {facts_line(ran)}" if ran.get("model") else "")
        return {"model": None, "quant": None, "adapter": None, "adapter_note": note}
    facts = (run_config or {}).get("model_facts")
    if facts and facts.get("model") == record.model:
        return dict(facts)
    quant = (record.engine_stats or {}).get("quant") or None
    note = None if record.adapter else \
        f"its run kept no reason (triage, or before issue 45); by default: {choose_adapter(record.model, None)[1]}"
    return {"model": record.model, "quant": quant, "adapter": record.adapter, "adapter_note": note}


def facts_line(facts: dict[str, str | None]) -> str:
    """'model embedded (q4_0), adapter none: …' — one line for terminals and pages."""
    if facts.get("model") is None:
        return f"model: none ({facts.get('adapter_note')})"
    quant = f" ({facts['quant']})" if facts.get("quant") else ""
    adapter = facts.get("adapter") or f"none: {facts.get('adapter_note')}"
    return f"model {facts['model']}{quant}, adapter {adapter}"
