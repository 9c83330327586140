"""What a forwarder knows of a delivery: how many events it took, in which state, and how many it never
sent. Every forwarder returns one, every `ForwardError` carries one, and the delivery cursor stores the
states per event id.

States, surest first: `indexed` (the receiver acknowledged indexing: Splunk's indexer acknowledgement),
`accepted` (it answered success and offers no acknowledgement), `sent` (written out; the transport
cannot confirm: syslog), `uncertain` (the whole batch went out and no answer came: the receiver may
have it, so it is not sent again unless asked).

Owns: the counting and its words. Does not send anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

STATES = ("indexed", "accepted", "sent", "uncertain")
DELIVERED = ("indexed", "accepted", "sent")
WORDS = {"indexed": "indexed (acknowledged by the receiver)",
         "accepted": "accepted (answered success; the receiver offers no acknowledgement)",
         "sent": "sent, not confirmed (the transport has no acknowledgement)",
         "uncertain": "uncertain (sent, no answer came: the receiver may have them; marked, not re-sent)"}

Marker = Callable[[list[str], str], None]  # (event ids, state): called as soon as a batch's state is known


def no_marks(ids: list[str], state: str) -> None:
    """The marker of a forwarder called without a delivery cursor."""


@dataclass
class Tally:
    total: int
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, state: str, count: int) -> None:
        self.counts[state] = self.counts.get(state, 0) + count

    @property
    def delivered(self) -> int:
        return sum(self.counts.get(state, 0) for state in DELIVERED)

    @property
    def uncertain(self) -> int:
        return self.counts.get("uncertain", 0)

    @property
    def unsent(self) -> int:
        return self.total - sum(self.counts.values())

    def describe(self) -> str:
        """e.g. "Of 542 events: 300 accepted (…), 242 not sent"."""
        parts = [f"{self.counts[state]} {WORDS[state]}" for state in STATES if self.counts.get(state)]
        if self.unsent:
            parts.append(f"{self.unsent} not sent")
        return f"Of {self.total} events: " + (", ".join(parts) or "nothing to send")

    def to_dict(self) -> dict[str, int]:
        return {"total": self.total, **{state: self.counts.get(state, 0) for state in STATES},
                "not_sent": self.unsent}
