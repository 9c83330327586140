"""One `Settings` object, read from environment variables (`LOGWARDEN_*`) and, only when one is
named, a config file (`--config FILE` or `LOGWARDEN_CONFIG`: `LOGWARDEN_*=value` lines, the
dotenv format); CLI options override it. Nothing is read from the current folder: a `.env` an
attacker (or a colleague) left where the analyst happens to stand must not change what is detected,
where the database is or which model runs. `origins` says where each setting came from
(`logwarden config`, `db info`). Nothing else reads the environment, and every run default lives
here once: `RunOptions.from_settings` (run_options) and `EngineOptions.from_settings` (backends) read
it, so a setting reaches analyze, watch, triage, eval and the UI alike."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from logwarden.engine.api import MAX_BATCH
from logwarden.errors import ConfigError

CONFIG_VARIABLE = "LOGWARDEN_CONFIG"
SECRETS = frozenset(("ui_password",))


def config_file() -> Path | None:
    """The config file named by `LOGWARDEN_CONFIG` (set by `--config`), checked to be a readable
    file; None when none is named."""
    named = os.environ.get(CONFIG_VARIABLE)
    if not named:
        return None
    path = Path(named).expanduser()
    if not path.is_file():
        raise ConfigError(f"config file {named} ({CONFIG_VARIABLE} / --config): not a readable file")
    return path


def _default_home() -> Path:
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "logwarden"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LOGWARDEN_", env_file=None, extra="ignore")

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments, then the environment, then the named config file; never a `.env` of the cwd."""
        path = config_file()
        named = (DotEnvSettingsSource(settings_cls, env_file=path),) if path is not None else ()
        return (init_settings, env_settings, *named)

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
    draft_model: str | None = None  # llama.cpp speculative decoding: a GGUF of the same vocabulary drafts (off)
    draft_tokens: int = 8  # at most this many drafted tokens per step
    max_new_tokens: int = 320  # the answer's token budget (analyze, watch, triage, eval, the UI)

    # the model's review: how much of it a run may do (auto = unlimited on a GPU, a few minutes on a CPU;
    # unlimited; 90s, 5m, 1h; 20000tok); what is left waits for `logwarden review --pending`
    llm_budget: str = "auto"

    # baselines of normal: judge (learn what did not deviate), learn (history: learn all, judge nothing) or off
    baseline: str = "judge"

    # a link in an analysed or watched folder that points out of it is skipped unless this is on (--follow-links)
    follow_links: bool = False

    # templates mined per source (Drain3): beyond them, a line no template matches is kept as a line
    max_templates: int = 1000

    # windowing / prompt
    window_max_lines: int = 2000
    window_max_gap_s: float = 900.0
    prompt_token_budget: int = 700

    # reviewed examples in the model's prompts (app/examples.py): the k most like the evidence (BM25 over the
    # shipped seed scenarios and the store's closed records), in the room the evidence leaves of the prompt's
    # budget and at most `retrieval_tokens`; the store's most recently reviewed `retrieval_store_examples`
    retrieval: bool = True
    retrieval_k: int = 3
    retrieval_tokens: int = 300
    retrieval_store_examples: int = 5000

    # incidents (app/incidents): records that share a pivot value within a gap form one incident. Specific
    # pivots (an address, a logon id, a process GUID, a file hash) bridge `incident_gap_s`; broad ones (a
    # host, an account) only `incident_weak_gap_s`. A value that chains more than `incident_max_fanout`
    # records, or (not a host) appears on more than `incident_max_pivot_hosts` hosts in one chain, is busy
    # (a domain controller, a proxy, a service account) and links nothing.
    incident_gap_s: float = 3600.0
    incident_weak_gap_s: float = 900.0
    incident_pivots: str = "host,user,ip,logon,process,hash"
    incident_max_fanout: int = 40
    incident_max_pivot_hosts: int = 4
    incident_min_risk: str = "low"  # records below this level join no incident
    incident_stories: int = 20  # most stories the model writes per run (riskiest first), within the LLM budget
    # a story's answer may be as long as its schema allows (title 100, summary 400, 3 steps of 120 characters,
    # 6 cited ids: ~350 tokens); one cut short is rejected, so it gets more room than a review's answer
    incident_story_max_new_tokens: int = 512

    # watcher
    watch_max_batch: int = 500
    watch_max_delay_ms: int = 2000
    watch_partial_line_timeout_s: float = 5.0

    ui_password: str | None = None
    # Set by `logwarden ui` for a non-loopback bind without a password: anyone who reaches the page may
    # read, no one may write (reviews, triage records). Set it yourself to make any UI read-only.
    ui_read_only: bool = False

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


def origins() -> dict[str, str]:
    """Where each setting's value comes from: `environment LOGWARDEN_X`, `config file PATH`, or
    `default` (the environment wins over the file, as in `Settings`)."""
    from_env = EnvSettingsSource(Settings)()
    path = config_file()
    from_file = DotEnvSettingsSource(Settings, env_file=path)() if path is not None else {}
    found = {}
    for name in Settings.model_fields:
        if name in from_env:
            found[name] = f"environment LOGWARDEN_{name.upper()}"
        elif name in from_file:
            found[name] = f"config file {path}"
        else:
            found[name] = "default"
    return found


def declared(name: str):
    """A setting's default as `Settings` declares it, for code that has no settings object at hand
    (dataclass defaults, library calls): the one place every default is written."""
    return Settings.model_fields[name].get_default(call_default_factory=True)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
