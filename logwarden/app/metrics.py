"""A run's metrics: what it read, queued, asked, stored and wrote (`RunMetrics`), and how the work
of each stage adds up into them — windows cut, records stored, a reviewer's or a story writer's
stats, the texts the gate turned down. The model's work is one `ModelUsage` (engine/api.py), the
counter the reviewer and the story writer keep too: a stage's is added whole (`usage +=`).

Owns: the counters, the ratios derived from them (`as_dict`, what a run's row keeps, flat: the
usage's fields beside the others) and their accounting. Knows nothing of the stages' order, the
store or progress displays: the pipeline hands in what each stage did.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from logwarden.engine.api import ModelUsage
from logwarden.schemas.record import RiskRecord

if TYPE_CHECKING:
    from logwarden.app.incidents.story import StoryStats
    from logwarden.app.mine import Window
    from logwarden.app.review import ReviewStats

CHARS_PER_TOKEN = 4.0  # for the raw-side of the compression ratio when no tokenizer is used


@dataclass(slots=True)
class RunMetrics:
    files: int = 0
    lines: int = 0
    raw_chars: int = 0
    windows: int = 0
    windows_llm: int = 0  # windows with prompts for the model
    windows_skipped_by_policy: int = 0
    prompts_queued: int = 0  # review items made
    llm_calls: int = 0  # prompts the review sent (retries and engine failures included)
    llm_failures: int = 0
    reviews_pending: int = 0  # review items the budget left awaiting review
    deviations_dismissed: int = 0  # deviation records the model judged normal (their level kept)
    windows_split: int = 0  # windows sent as more than one prompt
    rare_lines: int = 0  # lines of rare templates / rare value shapes, in every window with a digest (not rules-only)
    rare_lines_llm: int = 0  # ... in the windows sent to the model
    rare_lines_shown: int = 0  # ... shown to the model in some prompt
    findings: int = 0
    entities_named: int = 0  # entities (addresses, accounts, paths, numbers …) the model's texts named
    entities_ungrounded: int = 0  # ... absent from the digest it was given (their clauses removed)
    texts_rejected: dict[str, int] = field(default_factory=dict)  # reason → model texts the gate turned down (textgate)
    records: int = 0
    deviations: int = 0  # baseline deviations reported (app/baseline)
    errors: int = 0
    windows_quarantined: int = 0  # windows read whose rows the database refused: an error row each, not stored
    lines_quarantined: int = 0  # ... their lines (read, counted in `lines`, in no stored window)
    held_back_lines: int = 0  # unterminated last lines left for a later --resume (file not final)
    store_outages: int = 0  # times the watcher found its store unreachable (down, locked) and waited for it
    store_outage_s: float = 0.0  # how long it waited, all outages together
    truncated_lines: int = 0  # lines longer than the ingest limit, of which only the head was kept
    nul_bytes: int = 0  # NUL bytes dropped from lines (a padded or pre-allocated file is read, not skipped)
    raw_tokens: int = 0
    digest_chars: int = 0
    usage: ModelUsage = field(default_factory=ModelUsage)  # the review's and the stories' model work
    breaker_open: bool = False
    budget: str = ""
    elapsed_s: float = 0.0
    formats: dict[str, str] = field(default_factory=dict)
    years: dict[str, str] = field(default_factory=dict)  # source → how its year-less dates got their year
    skipped: dict[str, str] = field(default_factory=dict)  # source → why it is not a log (markdown, labels)
    records_by_level: dict[str, int] = field(default_factory=dict)
    records_by_category: dict[str, int] = field(default_factory=dict)
    incidents: int = 0  # incidents written by the last grouping (new, extended or unchanged)
    stories: int = 0  # incidents whose story the model wrote and code grounded
    story_invented_ids: int = 0  # record ids a story cited that are not its incident's (rejected)
    story_ungrounded: int = 0  # entities a story named that its records lack (removed)

    def as_dict(self) -> dict:
        """Flat: the usage's counts under their own names (prompt_tokens, new_tokens …; its calls as
        llm_generations), as runs rows, the runs page and the JSON summaries read them."""
        usage = self.usage
        d = {k: getattr(self, k) for k in self.__slots__ if k != "usage"}
        d |= {("llm_generations" if k == "calls" else k): v for k, v in usage.as_dict().items()}
        d["compression_ratio"] = self.compression_ratio
        d["lines_per_s"] = self.lines / self.elapsed_s if self.elapsed_s else 0.0
        d["tokens_per_s"] = usage.new_tokens / usage.generation_s if usage.generation_s else 0.0
        d["mean_ttft_s"] = usage.ttft_s_sum / usage.calls if usage.calls else 0.0
        d["llm_calls_per_1000_lines"] = 1000 * self.llm_calls / self.lines if self.lines else 0.0
        d["rare_line_coverage"] = self.rare_line_coverage
        d["ungrounded_rate"] = self.ungrounded_rate
        return d

    @property
    def rare_line_coverage(self) -> float | None:
        """Share of the rare lines of the windows sent to the model that some prompt showed it."""
        return self.rare_lines_shown / self.rare_lines_llm if self.rare_lines_llm else None

    @property
    def ungrounded_rate(self) -> float | None:
        """Share of the entities the model named that its digest did not contain."""
        return self.entities_ungrounded / self.entities_named if self.entities_named else None

    @property
    def compression_ratio(self) -> float | None:
        """Raw size ÷ prompt size (how many times smaller the model's input is); None when no
        digest was built (rules-only runs build none: no model would read it)."""
        if self.usage.prompt_tokens:
            return self.raw_tokens / self.usage.prompt_tokens
        return self.raw_chars / self.digest_chars if self.digest_chars else None

    # ---- accounting ---------------------------------------------------------------------------

    def add_window(self, window: Window) -> None:
        """A window's lines and characters, counted once it is cut (every line is in one window)."""
        chars = window.raw_chars
        self.windows += 1
        self.lines += len(window.events)
        self.raw_chars += chars
        self.raw_tokens += round(chars / CHARS_PER_TOKEN)

    def add_records(self, records: Sequence[RiskRecord]) -> None:
        self.records += len(records)
        for r in records:
            self.records_by_level[r.risk_level] = self.records_by_level.get(r.risk_level, 0) + 1
            self.records_by_category[r.category] = self.records_by_category.get(r.category, 0) + 1

    def quarantine(self, lines: int, records: Sequence[RiskRecord], reviews: Sequence[object]) -> None:
        """A window the database refused: its lines stay read, its records and prompts were never
        stored, and it is one error."""
        self.windows_quarantined += 1
        self.lines_quarantined += lines
        self.errors += 1
        self.records -= len(records)
        for r in records:
            self.records_by_level[r.risk_level] -= 1
            self.records_by_category[r.category] -= 1
        self.records_by_level = {k: n for k, n in self.records_by_level.items() if n}
        self.records_by_category = {k: n for k, n in self.records_by_category.items() if n}
        if reviews:
            self.windows_llm -= 1
            self.prompts_queued -= len(reviews)

    def recount(self, rows: Sequence[RiskRecord]) -> None:
        """The run's records by level and category again (`rows`: all of them), after the review changed some."""
        self.records = len(rows)
        self.records_by_level = dict(Counter(r.risk_level for r in rows))
        self.records_by_category = dict(Counter(r.category for r in rows))

    def add_review(self, stats: ReviewStats, *, pending: int) -> None:
        """A reviewer's work; `pending`: the run's review items still awaiting review."""
        self.llm_calls += stats.asked
        self.llm_failures += stats.failed
        self.reviews_pending = pending
        self.breaker_open = self.breaker_open or stats.breaker_open
        self.usage += stats.usage
        self.findings += stats.findings
        self.entities_named += stats.entities_named
        self.entities_ungrounded += stats.entities_ungrounded
        self.add_rejected(stats.texts_rejected)
        self.deviations_dismissed += stats.dismissed

    def add_stories(self, stats: StoryStats) -> None:
        """A story writer's work."""
        self.stories += stats.written
        self.incidents += stats.alone  # lone records their stories made incidents
        self.story_invented_ids += stats.invented
        self.story_ungrounded += stats.ungrounded
        self.add_rejected(stats.texts_rejected)
        self.usage += stats.usage

    def add_rejected(self, reasons: Mapping[str, int]) -> None:
        for reason, n in reasons.items():
            self.texts_rejected[reason] = self.texts_rejected.get(reason, 0) + n

    @property
    def spent(self) -> tuple[float, int]:
        """The model work done so far: (generation seconds, prompt + new tokens), what a budget counts."""
        return self.usage.generation_s, self.usage.tokens
