"""One `Settings` object, read from environment variables (`LOGWARDEN_*`) and an optional
`logwarden.toml`/`.env`; CLI options override it. Nothing else reads the environment, and every
run default lives here once: `RunOptions.from_settings` (pipeline) and `EngineOptions.from_settings`
(backends) read it, so a setting reaches analyze, watch, triage, eval and the UI alike."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from logwarden.engine.api import MAX_BATCH


def _default_home() -> Path:
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "logwarden"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LOGWARDEN_", env_file=".env", extra="ignore")

    home: Path = Field(default_factory=_default_home, description="Data dir: database, model cache.")
    db: str | None = Field(default=None, description="SQLAlchemy URL; default sqlite:///<home>/logwarden.db")
    node: str | None = Field(default=None, description="Name sources NODE:/path (a store shared by several hosts).")

    # engine
    engine: str = "auto"  # auto = llama.cpp for GGUF models on CPU, transformers on CUDA
    model: str = "embedded"
    adapter: str | None = None  # None = the default for the model ("none" disables)
    quant: str = "auto"
    threads: int | None = None  # CPU threads (llama.cpp or torch); None = the engine's default
    max_batch: int = MAX_BATCH
    max_new_tokens: int = 320  # the answer's token budget (analyze, watch, triage, eval, the UI)

    # baselines of normal: judge (learn what did not deviate), learn (history: learn all, judge nothing) or off
    baseline: str = "judge"

    # windowing / prompt
    window_max_lines: int = 2000
    window_max_gap_s: float = 900.0
    prompt_token_budget: int = 700

    # watcher
    watch_max_batch: int = 500
    watch_max_delay_ms: int = 2000
    watch_partial_line_timeout_s: float = 5.0

    ui_password: str | None = None

    # detection (Sigma): extra packs, the profile, placeholder values for `|expand` rules
    sigma_paths: str = Field(default="", description="Extra Sigma packs (folders or zips), separated by the OS path separator.")
    sigma_min_level: str = "low"  # informational | low | medium | high | critical
    sigma_experimental: bool = True  # run rules with status experimental (deprecated/unsupported never run)
    sigma_mute: str = ""  # comma-separated rule ids (uuid or name) that never run
    sigma_placeholders: Path | None = None  # YAML/JSON map: placeholder name → value(s)

    @property
    def db_url(self) -> str:
        if self.db:
            return self.db
        return f"sqlite:///{self.home / 'logwarden.db'}"

    @property
    def model_cache(self) -> Path:
        return self.home / "models"


def declared(name: str):
    """A setting's default as `Settings` declares it, for code that has no settings object at hand
    (dataclass defaults, library calls): the one place every default is written."""
    return Settings.model_fields[name].get_default(call_default_factory=True)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
