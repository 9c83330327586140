"""Template mining and windowing: events → clusters (Drain3) → windows → a compact digest.

Owns: the masking rules (named regexes), one `TemplateMiner` per source whose state is
persisted by the caller (`MinerState` bytes ↔ store), grouping a source's events into `Window`s
by time gap and size, and the `Digest` of a window — templates × counts, top entities, time
span and a few verbatim exemplar lines — which is what the model reads instead of the raw flood.
Knows nothing of files, the store or the model.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from drain3 import TemplateMiner
from drain3.masking import AbstractMaskingInstruction
from drain3.memory_buffer_persistence import MemoryBufferPersistence
from drain3.template_miner_config import TemplateMinerConfig

from logwarden.app.config import declared
from logwarden.app.events import Event

# Lines kept as lines (beyond the template bound) whose text is remembered: many windows' worth
LINES_KEPT = 50_000

# Similarity 0.4 (drain3's default) merged "Failed password …" with "Disconnected from
# authenticating user …" on sshd logs (FACTS.md); 0.5 keeps security-relevant variants apart.
SIMILARITY = 0.5

# Named masking rules, applied in this order in ONE regex pass (alternation of named groups):
# earlier rules win where two could match the same text.
MASKING_RULES: tuple[tuple[str, str], ...] = (
    ("UUID", r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
    ("EMAIL", r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"),
    ("URL", r"\bhttps?://[^\s\"'<>]+"),
    ("IP", r"(?<![\w.:])(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?(?![\w.])"),
    ("IP", r"(?<![\w:])(?:[0-9a-fA-F]{1,4}:){2,7}[0-9a-fA-F]{0,4}(?![\w:])"),
    ("HASH", r"\b(?:[0-9a-fA-F]{64}|[0-9a-fA-F]{40}|[0-9a-fA-F]{32})\b"),
    ("HEX", r"\b0x[0-9a-fA-F]+\b"),
    ("USER", r"(?<=\buser )[^\s=]+|(?<=\bUSER=)\S+|(?<=\buser=)\S+|(?<=\bacct=)\S+"),
    ("PATH", r"(?<![\w/])/[^\s\"'?]*[^\s\"'?/.,;:)\]]"),
    ("NUM", r"(?<![\w.-])[-+]?\d+(?:\.\d+)?(?!\w|\.[\w.])"),  # "session 41." ends a sentence
)


_USER_NAME = re.compile(r"[^\s=(\[\]),;:]+")


class CombinedMasking(AbstractMaskingInstruction):
    """All masking rules as one compiled alternation, applied token by token with a cache.

    Drain tokenizes on whitespace anyway, so masking each whitespace token alone gives the same
    template; most tokens (words, program names, fixed fields) repeat, so the cache skips the
    regex for them — masking was the largest cost of mining before (bench/ingest.py --profile).
    The one rule that looks across tokens — the word after "user" is a user name — is applied here.
    """

    CACHE_MAX = 200_000

    def __init__(self) -> None:
        super().__init__("*")
        self._names = [name for name, _ in MASKING_RULES]
        self.regex = re.compile("|".join(f"(?P<g{i}>{pattern})" for i, (_, pattern) in enumerate(MASKING_RULES)))
        self._cache: dict[str, str] = {}

    def _mask_token(self, token: str, prefix: str, suffix: str) -> str:
        masked = self._cache.get(token)
        if masked is None:
            if len(token) < 32 and token.isdigit() and token.isascii():
                # Ports, ids, counts: half the tokens the cache misses. Only the NUM rule can
                # match a run of digits shorter than a hash, and it matches all of it.
                return f"{prefix}NUM{suffix}"
            masked = self.regex.sub(lambda m: f"{prefix}{self._names[int(m.lastgroup[1:])]}{suffix}", token)
            if len(self._cache) >= self.CACHE_MAX:
                self._cache.clear()
            self._cache[token] = masked
        return masked

    def mask(self, content: str, mask_prefix: str, mask_suffix: str) -> str:
        tokens = content.split()
        cached = self._cache.get  # most tokens repeat: a lookup each, no call
        out = [cached(token) or self._mask_token(token, mask_prefix, mask_suffix) for token in tokens]
        if "user" in tokens:
            self._mask_user_names(tokens, out, mask_prefix, mask_suffix)
        return " ".join(out)

    def _mask_user_names(self, tokens: list[str], out: list[str], prefix: str, suffix: str) -> None:
        """The token after "user" starts with a user name: "user root(uid=0)" → "user <USER>(uid=<NUM>)"."""
        for i in range(1, len(tokens)):
            name = _USER_NAME.match(tokens[i]) if tokens[i - 1] == "user" else None
            if name:
                rest = tokens[i][name.end():]
                out[i] = f"{prefix}USER{suffix}" + (self._mask_token(rest, prefix, suffix) if rest else "")


def _miner_config(max_templates: int) -> TemplateMinerConfig:
    config = TemplateMinerConfig()
    config.drain_sim_th = SIMILARITY
    config.drain_depth = 4
    config.drain_max_children = 100
    # Drain3's own bound: beyond it, it evicts the least recently used template to make room for a new
    # one. SourceMiner makes no new template at the bound, so nothing is evicted; this caps memory
    # should a restored state hold more.
    config.drain_max_clusters = max_templates
    config.masking_instructions = [CombinedMasking()]
    config.snapshot_interval_minutes = 10**9  # we snapshot explicitly, never on a timer
    config.snapshot_compress_state = True
    return config


class SourceMiner:
    """One Drain3 miner for one source; `state()` / `SourceMiner(state)` persist it across runs.

    At most `max_templates` templates: once a source has that many, a line that matches none is
    kept as a line — its own one-line "template" (its masked text) under an id below zero, not
    mined. Lines that are all unique (random tokens, a flood of one-off messages) would otherwise
    make a template each, and Drain compares every line with all the templates of its tree leaf:
    the cost of a line grows with the templates, and the miner's state with it."""

    def __init__(self, state: bytes | None = None, *, max_templates: int = declared("max_templates")):
        self._persistence = MemoryBufferPersistence()
        self._persistence.state = state
        self._miner = TemplateMiner(self._persistence, _miner_config(max_templates))
        self.max_templates = max_templates
        self._cache: dict[str, int] = {}  # masked text → cluster id (identical lines are common)
        self._masked: dict[str, str] = {}  # text → masked text (daemons repeat messages verbatim)
        self._lines: dict[int, list] = {}  # id (< 0) → [masked text, lines] of a line kept as a line
        self._next_line_id = -1

    def add(self, text: str) -> int:
        """Cluster id of `text` (mined message of one event)."""
        masked = self._masked.get(text)
        if masked is None:
            masked = self._miner.masker.mask(text)
            if len(text) <= 512:  # long lines rarely repeat, and must not pin memory
                if len(self._masked) >= 8192:
                    self._masked.clear()
                self._masked[text] = masked
        cluster_id = self._cache.get(masked)
        if cluster_id is not None and cluster_id < 0 and cluster_id in self._lines:  # the same line again
            self._lines[cluster_id][1] += 1
            return cluster_id
        if cluster_id is not None:
            cluster = self._miner.drain.id_to_cluster.get(cluster_id)
            if cluster is not None:
                cluster.size += 1
                return cluster_id
        drain = self._miner.drain
        if len(drain.id_to_cluster) < self.max_templates:
            cluster, _ = drain.add_log_message(masked)
        else:
            cluster = self._join(masked)
        cluster_id = cluster.cluster_id if cluster is not None else self._kept_as_line(masked)
        if len(self._cache) > 50_000:
            self._cache.clear()
        self._cache[masked] = cluster_id
        return cluster_id

    def _join(self, masked: str):
        """At the bound: the template the line belongs to, updated as Drain's `add_log_message`
        does, or None (no template is made)."""
        drain = self._miner.drain
        tokens = drain.get_content_as_tokens(masked)
        cluster = drain.tree_search(drain.root_node, tokens, drain.sim_th, False)
        if cluster is not None:
            cluster.log_template_tokens = tuple(drain.create_template(tokens, cluster.log_template_tokens))
            cluster.size += 1
            drain.id_to_cluster[cluster.cluster_id]  # noqa: B018 - touched: most recently used
        return cluster

    def _kept_as_line(self, masked: str) -> int:
        line_id, self._next_line_id = self._next_line_id, self._next_line_id - 1
        if len(self._lines) >= LINES_KEPT:  # the oldest go: their windows were cut long ago
            del self._lines[next(iter(self._lines))]
        self._lines[line_id] = [masked, 1]
        return line_id

    def template(self, cluster_id: int) -> str:
        if cluster_id < 0:
            return self._lines[cluster_id][0] if cluster_id in self._lines else "<evicted template>"
        cluster = self._miner.drain.id_to_cluster.get(cluster_id)
        return cluster.get_template() if cluster is not None else "<evicted template>"

    def templates(self, cluster_ids: Iterable[int]) -> dict[int, str]:
        """The current template of each of these clusters (a window's, for its digest)."""
        return {cid: self.template(cid) for cid in dict.fromkeys(cluster_ids)}

    def cluster_size(self, cluster_id: int) -> int:
        """How many lines the cluster holds so far (0 once evicted; a line kept as a line: how often
        the same masked text came)."""
        if cluster_id < 0:
            return self._lines[cluster_id][1] if cluster_id in self._lines else 0
        cluster = self._miner.drain.id_to_cluster.get(cluster_id)
        return cluster.size if cluster is not None else 0

    def state(self) -> bytes:
        self._miner.save_state("checkpoint")
        return self._persistence.state

    @property
    def cluster_count(self) -> int:
        """Templates mined (lines kept as lines are none)."""
        return len(self._miner.drain.id_to_cluster)


def mined_text(event: Event) -> str:
    """What the miner sees: the message without timestamp/host noise; programs kept apart."""
    text = event.message or event.raw
    return f"{event.program}: {text}" if event.program else text


@dataclass(slots=True)
class Window:
    """Consecutive events of one source analysed together (one LLM call at most)."""

    source: str
    inode: int
    format: str
    events: list[Event] = field(default_factory=list)
    cluster_ids: list[int] = field(default_factory=list)  # parallel to events
    generation: int = 0  # of the source: a copytruncated file restarts at line 1 as the next generation
    # A window rebuilt from a few of its events (a review waiting in the store) keeps the span it had
    span: tuple[int, int] | None = None
    _host: tuple[str | None] | None = field(default=None, repr=False, compare=False)  # host(), once complete
    _clusters: dict[int, int] | None = field(default=None, repr=False, compare=False)  # cluster_of_line(), once complete

    @property
    def line_start(self) -> int:
        return self.span[0] if self.span else self.events[0].line_no

    @property
    def line_end(self) -> int:
        return self.span[1] if self.span else self.events[-1].line_no

    @property
    def first_ts(self) -> datetime | None:
        return next((e.ts for e in self.events if e.ts is not None), None)

    @property
    def last_ts(self) -> datetime | None:
        return next((e.ts for e in reversed(self.events) if e.ts is not None), None)

    @property
    def raw_chars(self) -> int:
        return sum(len(e.raw) + 1 for e in self.events)

    def cluster_of_line(self) -> dict[int, int]:
        """Line number → cluster id; built once (each record's evidence asks), so only ask a window
        `windows()` has yielded."""
        if self._clusters is None:
            self._clusters = {e.line_no: cid for e, cid in zip(self.events, self.cluster_ids)}
        return self._clusters

    def host(self) -> str | None:
        """The most frequent host; computed once (the digest and every record ask), so only ask a
        window `windows()` has yielded."""
        if self._host is None:
            hosts = Counter(e.host for e in self.events if e.host)
            self._host = (hosts.most_common(1)[0][0] if hosts else None,)
        return self._host[0]


def _forward_gap_s(a: datetime | None, b: datetime | None) -> float:
    """How far `b` lies after `a` (0 when before, or when the two cannot be compared)."""
    if a is None or b is None or (a.tzinfo is None) != (b.tzinfo is None):
        return 0.0
    return max(0.0, (b - a).total_seconds())


def windows(events: Iterable[Event], miner: SourceMiner, *, source: str, inode: int, fmt: str,
            max_lines: int = 2000, max_gap_s: float = 300.0, generation: int = 0) -> Iterator[Window]:
    """Mine every event and cut the stream into windows at a time gap or the size budget.

    The gap is measured forward from the latest time the window holds: a line dated earlier (a late
    write, a clock stepped back, or a sample whose lines are not in time order, as loghub's are)
    joins the window instead of cutting it; time moving on by more than `max_gap_s` cuts."""
    current = Window(source, inode, fmt, generation=generation)
    latest: datetime | None = None
    for event in events:
        ts = event.ts
        gap = 0.0 if ts is latest else _forward_gap_s(latest, ts)  # syslog lines of one second share one time
        if current.events and (len(current.events) >= max_lines or gap > max_gap_s):
            yield current
            current, latest, gap = Window(source, inode, fmt, generation=generation), None, 0.0
        current.events.append(event)
        current.cluster_ids.append(miner.add(mined_text(event)))
        if ts is not None and (latest is None or gap > 0):  # the gap is this line's lead over the latest
            latest = ts
    if current.events:
        yield current
