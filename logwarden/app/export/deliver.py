"""The forward verb (`export --forward`): records or incidents to a destination, each once.

A delivery cursor (the store's `deliveries`, passed in as a `Cursor`) remembers, per destination and
kind, which event ids the destination took and how sure that is (`tally.STATES`). A run sends only what
the destination has not taken; `resend="uncertain"` also sends what may have arrived without an
answer, `resend="all"` everything again. Each batch's state is stored as soon as it is known, so a
failure mid-way leaves the cursor right and the re-run that the error advises sends only the rest.

The event id is the record's (or incident's) id, deterministic: the same findings give the same ids
in every format (HEC `fields.record_id` and `event.id`, ECS `event.id`, OCSF `metadata.uid`, CEF
`externalId`, JSONL `id`), so a receiver can deduplicate what was sent twice.

Owns: which items go, to which destination key, and the report. Does not open the store or send bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from logwarden.app.export import forward, syslog
from logwarden.app.export.forward import forward_splunk_hec, hec_endpoint
from logwarden.app.export.syslog import forward_syslog, parse_syslog_url
from logwarden.app.export.tally import Tally
from logwarden.errors import ConfigError

RESEND = ("none", "uncertain", "all")


class Cursor(Protocol):
    def states(self, destination: str, kind: str) -> dict[str, str]: ...

    def mark(self, destination: str, kind: str, item_ids: Iterable[str], state: str) -> None: ...


@dataclass(frozen=True, slots=True)
class ForwardOptions:
    token: str | None = None  # the HEC token
    verify_tls: bool = True
    timeout: float | None = None  # seconds a request (syslog: a connect, a write) may take; None: the default
    resend: str = "none"  # none | uncertain | all


@dataclass(frozen=True, slots=True)
class DeliveryReport:
    destination: str
    kind: str
    selected: int  # the items the filters chose
    skipped: int  # of those, already taken by the destination
    tally: Tally  # what this run sent

    @property
    def confirmed(self) -> bool:
        """Did the destination confirm all it got (False for syslog: nothing can be confirmed)?"""
        return not any(self.tally.counts.get(state) for state in ("sent", "uncertain"))

    def to_dict(self) -> dict[str, Any]:
        return {"destination": self.destination, "kind": self.kind, "selected": self.selected,
                "already_delivered": self.skipped, "this_run": self.tally.to_dict(), "confirmed": self.confirmed}


def destination_key(url: str) -> str:
    """What the cursor calls a destination: the HEC event endpoint, or the syslog host, port and transport
    (facility and framing change how, not where). Tokens never appear in URLs here."""
    if url.startswith(("http://", "https://")):
        return hec_endpoint(url)
    if url.startswith("syslog"):
        target = parse_syslog_url(url)
        return f"syslog+{target.transport}://{target.host.lower()}:{target.port}"
    raise ConfigError(f"--forward {url!r}: use https://…/services/collector/event or syslog[+tcp]://host:port")


def deliver(items: Sequence[tuple[str, str]], url: str, *, fmt: str, kind: str, cursor: Cursor,
            options: ForwardOptions) -> DeliveryReport:
    """Send the (event id, serialized event) `items` the destination has not taken. A failure raises
    ForwardError (its tally and message say what went where); the cursor is right either way."""
    if options.resend not in RESEND:
        raise ConfigError(f"resend is one of {', '.join(RESEND)}, not {options.resend!r}")
    destination = destination_key(url)
    taken = {} if options.resend == "all" else cursor.states(destination, kind)
    send_again = {"uncertain"} if options.resend == "uncertain" else set()
    pending = [(item_id, text) for item_id, text in items if item_id not in taken or taken[item_id] in send_again]
    ids, texts = [item_id for item_id, _ in pending], [text for _, text in pending]

    def mark(batch_ids: list[str], state: str) -> None:
        cursor.mark(destination, kind, batch_ids, state)

    if destination.startswith("http"):
        if fmt != "splunk-hec":
            raise ConfigError("an http(s) --forward is a Splunk HEC endpoint: use --format splunk-hec")
        if not options.token:
            raise ConfigError("A Splunk HEC token is required.")
        tally = forward_splunk_hec(texts, url, token=options.token, ids=ids, mark=mark,
                                   verify_tls=options.verify_tls, timeout=options.timeout or forward.TIMEOUT_S)
    else:
        tally = forward_syslog(texts, url, ids=ids, mark=mark, timeout=options.timeout or syslog.TIMEOUT_S)
    return DeliveryReport(destination, kind, len(items), len(items) - len(pending), tally)
