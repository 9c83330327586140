"""Deliver HEC events to Splunk's HTTP Event Collector (httpx), each batch once.

Events are sent in batches (by count and by bytes: HEC's default max content length is 1 MB) as
concatenated JSON objects, which HEC accepts in one request. Every request names a channel
(`X-Splunk-Request-Channel`); where the token has indexer acknowledgement on, HEC answers an
`ackId` and `/services/collector/ack` later says whether the batch was indexed (`indexed`), else
the 2xx answer is all there is (`accepted`).

Retried with exponential back-off: connection failures before the request went out and 5xx answers
(HEC did not take the batch). Not retried: a batch that went out whole and got no answer (a time-out,
a dropped connection): HEC may have indexed it, so it is marked `uncertain` and the delivery stops.
401/403 mean a bad token and fail at once with ConfigError.

Owns: HTTP delivery and acknowledgement. Does not build events (see splunk.py) or keep the cursor.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import httpx

from logwarden.app.export.errors import ForwardError
from logwarden.app.export.tally import Marker, Tally, no_marks
from logwarden.errors import ConfigError

HEC_PATH = "/services/collector/event"
ACK_PATH = "/services/collector/ack"
CHANNEL_HEADER = "X-Splunk-Request-Channel"
MAX_BATCH_BYTES = 800_000
TIMEOUT_S = 30.0  # one request
# failures that mean the request never reached the server: safe to send again
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class _Unanswered(Exception):
    """The batch went out whole and no answer came: the server may have indexed it."""


class _Refused(Exception):
    """The server did not take the batch (5xx after the retries, 4xx, unreachable)."""


def forward_splunk_hec(events: Iterable[str | dict[str, Any]], url: str, *, token: str,
                       ids: Sequence[str] | None = None, mark: Marker = no_marks, verify_tls: bool = True,
                       batch: int = 100, retries: int = 3, backoff_s: float = 0.5, timeout: float = TIMEOUT_S,
                       ack_timeout: float = 60.0, ack_poll_s: float = 1.0) -> Tally:
    """POST `events` (HEC envelopes, as JSON text or dicts) whose event ids are `ids` (default: their
    positions); `mark(ids, state)` hears each batch's state as soon as it is known. Returns the tally;
    a failure raises ForwardError carrying it (what went where is in its message too)."""
    if not token:
        raise ConfigError("A Splunk HEC token is required (--token or LOGWARDEN_SPLUNK_TOKEN).")
    endpoint = hec_endpoint(url)
    texts = [event if isinstance(event, str) else json.dumps(event, ensure_ascii=False) for event in events]
    event_ids = list(ids) if ids is not None else [str(i) for i in range(len(texts))]
    if len(event_ids) != len(texts):
        raise ValueError("forward_splunk_hec: one id per event")
    headers = {"Authorization": f"Splunk {token}", "Content-Type": "application/json",
               CHANNEL_HEADER: str(uuid.uuid4())}
    tally = Tally(len(texts))

    def settle(batch_ids: list[str], state: str) -> None:
        mark(batch_ids, state)
        tally.add(state, len(batch_ids))

    with httpx.Client(verify=verify_tls, timeout=timeout, headers=headers) as client:
        waiting: dict[int, list[str]] = {}  # ackId → the batch's event ids
        problem = ""
        try:
            for body, batch_ids in _batches(texts, event_ids, batch):
                try:
                    ack_id = _post(client, endpoint, body, retries=retries, backoff_s=backoff_s)
                except _Unanswered as exc:
                    settle(batch_ids, "uncertain")
                    problem = (f"Splunk HEC at {endpoint} took a batch of {len(batch_ids)} events and gave no answer "
                               f"({exc}); it may have indexed them, so they are not sent again")
                    break
                if ack_id is None:
                    settle(batch_ids, "accepted")
                else:
                    waiting[ack_id] = batch_ids
        except _Refused as exc:
            problem = str(exc)
        finally:  # also before a ConfigError: what was acknowledged stays remembered
            _await_acks(client, ack_endpoint(endpoint), waiting, settle, ack_timeout=ack_timeout,
                        poll_s=ack_poll_s)
    if problem:
        again = (" (--resend uncertain sends the uncertain ones again; receivers can deduplicate them by event id)"
                 if tally.uncertain else "")
        raise ForwardError(f"{problem}. {tally.describe()}. The cursor remembers what was taken: "
                           f"re-run the same export to send the rest{again}.", tally)
    return tally


def hec_endpoint(url: str) -> str:
    """A bare https://host:8088 gets the standard event endpoint; an explicit path is kept."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"Bad Splunk HEC URL {url!r}: {exc}. Use e.g. https://splunk:8088.") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(f"Bad Splunk HEC URL {url!r}; use e.g. https://splunk:8088.")
    return str(parsed.copy_with(path=HEC_PATH)) if parsed.path in ("", "/") else str(parsed)


def ack_endpoint(endpoint: str) -> str:
    """The acknowledgement endpoint beside the event endpoint (`…/services/collector/ack`)."""
    parsed = httpx.URL(endpoint)
    prefix = parsed.path.split("/services/collector", 1)[0]
    return str(parsed.copy_with(path=prefix + ACK_PATH, query=None))


def _batches(texts: list[str], ids: list[str], size: int) -> Iterator[tuple[bytes, list[str]]]:
    chunk: list[bytes] = []
    chunk_ids: list[str] = []
    length = 0
    for text, event_id in zip(texts, ids):
        data = text.encode("utf-8")
        if chunk and (len(chunk) >= size or length + len(data) > MAX_BATCH_BYTES):
            yield b"\n".join(chunk), chunk_ids
            chunk, chunk_ids, length = [], [], 0
        chunk.append(data)
        chunk_ids.append(event_id)
        length += len(data) + 1
    if chunk:
        yield b"\n".join(chunk), chunk_ids


def _post(client: httpx.Client, endpoint: str, body: bytes, *, retries: int, backoff_s: float) -> int | None:
    """The batch's ackId (None: HEC offers no acknowledgement). Retries only what HEC surely did not take."""
    last_problem = ""
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff_s * 2 ** (attempt - 1))
        try:
            response = client.post(endpoint, content=body)
        except NOT_SENT as exc:
            last_problem = f"{type(exc).__name__}: {exc}"
            continue
        except httpx.TransportError as exc:
            raise _Unanswered(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__) from exc
        if response.status_code < 500:
            return _accepted(response, endpoint)
        last_problem = f"HTTP {response.status_code}: {response.text[:200]}"
    raise _Refused(f"Splunk HEC at {endpoint} failed after {retries + 1} attempts ({last_problem}). "
                   "Check that Splunk is up and HEC is enabled")


def _accepted(response: httpx.Response, endpoint: str) -> int | None:
    if response.status_code in (401, 403):
        raise ConfigError(f"Splunk HEC at {endpoint} rejected the token (HTTP {response.status_code}: "
                          f"{response.text[:200]}). Check the token and that it is enabled in Splunk.")
    if response.status_code >= 400:
        raise _Refused(f"Splunk HEC at {endpoint} refused the events (HTTP {response.status_code}: "
                       f"{response.text[:200]})")
    try:
        ack_id = response.json().get("ackId")
    except (ValueError, AttributeError):
        return None
    return ack_id if isinstance(ack_id, int) else None


def _await_acks(client: httpx.Client, endpoint: str, waiting: dict[int, list[str]], settle: Marker, *,
                ack_timeout: float, poll_s: float) -> None:
    """Ask HEC which batches it indexed until all are or `ack_timeout` passes; the rest are uncertain."""
    deadline = time.monotonic() + ack_timeout
    while waiting:
        for ack_id in _indexed(client, endpoint, list(waiting)):
            settle(waiting.pop(ack_id), "indexed")
        if not waiting or time.monotonic() >= deadline:
            break
        time.sleep(poll_s)
    for batch_ids in waiting.values():
        settle(batch_ids, "uncertain")
    waiting.clear()


def _indexed(client: httpx.Client, endpoint: str, ack_ids: list[int]) -> list[int]:
    """The ackIds HEC says are indexed; none when the query fails (they stay waiting)."""
    try:
        response = client.post(endpoint, json={"acks": ack_ids})
        answers = response.json().get("acks", {}) if response.status_code == 200 else {}
    except (httpx.HTTPError, ValueError, AttributeError):
        return []
    return [ack_id for ack_id in ack_ids if answers.get(str(ack_id)) is True]
