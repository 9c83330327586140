"""A run's options (`RunOptions`, `from_settings`): the rules, budgets, windows and incidents of an
analyze, a watch, an eval or a triage, resolved once from the settings and a command's flags.

Its own room, apart from the pipeline that takes it, so that a command which only needs the options
(`triage`, above all with `--no-store`) imports no store, SQLAlchemy, review or regrouping.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from logwarden.app.config import Settings, declared
from logwarden.app.detect import RuleSources
from logwarden.app.examples import RetrievalOptions
from logwarden.app.incidents import IncidentOptions
from logwarden.app.policy import DEFAULT_LLM_POLICY


@dataclass(slots=True)
class RunOptions:
    rules_only: bool = False
    llm_policy: str = DEFAULT_LLM_POLICY
    llm_budget: str = declared("llm_budget")  # auto | unlimited | 90s | 5m | 20000tok (app/review.Budget)
    max_batch: int = declared("max_batch")
    max_new_tokens: int = declared("max_new_tokens")
    window_max_lines: int = declared("window_max_lines")
    max_templates: int = declared("max_templates")  # per source; beyond them rare lines are kept as lines
    window_max_gap_s: float = declared("window_max_gap_s")
    prompt_token_budget: int = declared("prompt_token_budget")
    # A window with more rare lines than one prompt holds is split; at most this many prompts each
    # (None: as many as its rare lines need). The rare lines left out count against coverage.
    max_prompts_per_window: int | None = 4
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    follow_links: bool = declared("follow_links")  # read links in a folder that point out of it
    resume: bool = False
    # Files nothing is appended to any more: an unterminated last line is a line, not a line being
    # written (compressed and rotated files are final anyway).
    final: bool = False
    # A file nothing has written to for this long is final too (None: only --final, compressed and
    # rotated files are): a downloaded CloudTrail .json is one line without a newline, and held
    # back it gave no record at all. The watcher flushes a partial line after the same quiet.
    quiet_final_s: float | None = None
    # Sources are named NODE:/path in a store shared by several hosts (None: the path alone).
    node: str | None = None
    # Long files commit records in chunks (bounded memory). None: each `process` call is one
    # transaction (the watcher's: a batch's records and its offset must land in one).
    commit_every_windows: int | None = 64
    # Incidents follow each commit and no stories are written here (the watcher: its review runs
    # beside it; `incidents group` writes them). False: analyze's — grouped once, after the review.
    incremental: bool = False
    rules: RuleSources | None = None  # the run's packs (from_settings: shipped, installed, configured, --sigma); None: shipped
    baseline: str = declared("baseline")  # judge | learn | off (app/baseline)
    year: int | None = None  # the year of year-less dates (--year); None: from the run's dated lines (parse.dating)
    # Incidents (app/incidents): grouping after the records are stored (analyze: once, after the review;
    # incremental: after each commit), and the model's stories (analyze, within the LLM budget).
    incidents: IncidentOptions | None = field(default_factory=IncidentOptions)
    # reviewed examples in the review's and triage's prompts (app/examples.py); stories get none (story.py)
    retrieval: RetrievalOptions = field(default_factory=RetrievalOptions)

    @classmethod
    def from_settings(cls, settings: Settings, *, sigma: Sequence[str | Path] = (), **overrides) -> RunOptions:
        """The settings' run defaults, with the options a command was given (None = not given);
        `sigma`: extra packs (--sigma), after the shipped, installed and configured ones."""
        options = cls(rules=RuleSources.from_settings(settings, sigma), max_batch=settings.max_batch,
                      max_new_tokens=settings.max_new_tokens,
                      window_max_lines=settings.window_max_lines, window_max_gap_s=settings.window_max_gap_s,
                      prompt_token_budget=settings.prompt_token_budget, node=settings.node,
                      quiet_final_s=settings.watch_partial_line_timeout_s, baseline=settings.baseline,
                      llm_budget=settings.llm_budget, incidents=IncidentOptions.from_settings(settings),
                      follow_links=settings.follow_links, max_templates=settings.max_templates,
                      retrieval=RetrievalOptions.from_settings(settings))
        return dataclasses.replace(options, **{k: v for k, v in overrides.items() if v is not None})
