"""Deliver HEC events to Splunk's HTTP Event Collector (httpx).

Events are sent in batches (by count and by bytes: HEC's default max content length is 1 MB) as
concatenated JSON objects, which HEC accepts in one request. 5xx answers and connection errors
are retried with exponential back-off; 401/403 mean a bad token and fail at once with ConfigError.

Owns: HTTP delivery. Does not build events (see splunk.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from typing import Any

import httpx

from logwarden.app.export.errors import ForwardError
from logwarden.errors import ConfigError

HEC_PATH = "/services/collector/event"
MAX_BATCH_BYTES = 800_000


def forward_splunk_hec(events: Iterable[str | dict[str, Any]], url: str, *, token: str, verify_tls: bool = True,
                       batch: int = 100, retries: int = 3, backoff_s: float = 0.5, timeout: float = 30.0) -> int:
    """POST `events` (HEC envelopes, as JSON text or dicts); returns how many were accepted."""
    if not token:
        raise ConfigError("A Splunk HEC token is required (--token or LOGWARDEN_SPLUNK_TOKEN).")
    endpoint = hec_endpoint(url)
    headers = {"Authorization": f"Splunk {token}", "Content-Type": "application/json"}
    sent = 0
    with httpx.Client(verify=verify_tls, timeout=timeout, headers=headers) as client:
        for body, count in _batches(events, batch):
            _post_with_retries(client, endpoint, body, retries=retries, backoff_s=backoff_s)
            sent += count
    return sent


def hec_endpoint(url: str) -> str:
    """A bare https://host:8088 gets the standard event endpoint; an explicit path is kept."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"Bad Splunk HEC URL {url!r}: {exc}. Use e.g. https://splunk:8088.") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(f"Bad Splunk HEC URL {url!r}; use e.g. https://splunk:8088.")
    return str(parsed.copy_with(path=HEC_PATH)) if parsed.path in ("", "/") else str(parsed)


def _batches(events: Iterable[str | dict[str, Any]], size: int) -> Iterator[tuple[bytes, int]]:
    chunk: list[bytes] = []
    length = 0
    for event in events:
        data = (event if isinstance(event, str) else json.dumps(event, ensure_ascii=False)).encode("utf-8")
        if chunk and (len(chunk) >= size or length + len(data) > MAX_BATCH_BYTES):
            yield b"\n".join(chunk), len(chunk)
            chunk, length = [], 0
        chunk.append(data)
        length += len(data) + 1
    if chunk:
        yield b"\n".join(chunk), len(chunk)


def _post_with_retries(client: httpx.Client, endpoint: str, body: bytes, *, retries: int, backoff_s: float) -> None:
    last_problem = ""
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff_s * 2 ** (attempt - 1))
        try:
            response = client.post(endpoint, content=body)
        except httpx.TransportError as exc:
            last_problem = f"{type(exc).__name__}: {exc}"
            continue
        if response.status_code < 500:
            _check(response, endpoint)
            return
        last_problem = f"HTTP {response.status_code}: {response.text[:200]}"
    raise ForwardError(f"Splunk HEC at {endpoint} failed after {retries + 1} attempts ({last_problem}). "
                       "Check that Splunk is up and HEC is enabled; the records stay in the store, re-run the export.")


def _check(response: httpx.Response, endpoint: str) -> None:
    if response.status_code in (401, 403):
        raise ConfigError(f"Splunk HEC at {endpoint} rejected the token (HTTP {response.status_code}: "
                          f"{response.text[:200]}). Check the token and that it is enabled in Splunk.")
    if response.status_code >= 400:
        raise ForwardError(f"Splunk HEC at {endpoint} refused the events (HTTP {response.status_code}: "
                           f"{response.text[:200]}).")
