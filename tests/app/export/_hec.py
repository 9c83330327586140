"""A Splunk HTTP Event Collector stand-in that really listens on loopback (http.server): token, path
and JSON envelope checked like HEC; optionally indexer acknowledgement (a channel is then required,
`ackId`s answered and `/services/collector/ack` queried), a failure after N batches, and a stall after
indexing (the client times out on a batch the server has indexed)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "5f0c7e4a-1d2b-4c3d-9e8f-0a1b2c3d4e5f"


class HecServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), HecHandler)
        self.events: list[dict] = []
        self.requests = 0  # requests, but for ack queries
        self.fail_next = 0  # answer this many requests with 503 first
        self.fail_after: int | None = None  # answer 503 to every batch after this many were indexed
        self.batches = 0
        self.stall = False  # index, then answer only when `release` is set
        self.release = threading.Event()
        self.use_ack = False  # indexer acknowledgement on (the token's useACK)
        self.acks_pending = 0  # answer an ack query "not yet" this many times first
        self.acked: dict[str, set[int]] = {}  # channel → ackIds indexed
        self.ack_queries = 0
        self.channels: set[str] = set()
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def ids(self) -> list[str]:
        return [e["event"]["id"] for e in self.events]

    def close(self) -> None:
        self.release.set()
        self.shutdown()
        self.server_close()


class HecHandler(BaseHTTPRequestHandler):
    server: HecServer

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers["Content-Length"])).decode("utf-8")
        is_ack = self.path == "/services/collector/ack"
        with self.server.lock:
            self.server.requests += not is_ack
        if self.headers.get("Authorization") != f"Splunk {TOKEN}":
            code = 401 if self.headers.get("Authorization") is None else 403
            return self._answer(code, {"text": "Invalid token", "code": 4})
        channel = self.headers.get("X-Splunk-Request-Channel")
        if is_ack:
            return self._ack(channel, json.loads(body))
        with self.server.lock:
            if self.server.fail_next:
                self.server.fail_next -= 1
                return self._answer(503, {"text": "Server is busy", "code": 9})
            if self.server.fail_after is not None and self.server.batches >= self.server.fail_after:
                return self._answer(503, {"text": "Server is busy", "code": 9})
        if self.path != "/services/collector/event":
            return self._answer(404, {"text": "The requested URL was not found", "code": 404})
        if self.server.use_ack and not channel:
            return self._answer(400, {"text": "Data channel is missing", "code": 10})
        events = concatenated_json(body)
        if not all({"time", "event", "sourcetype"} <= set(e) for e in events):
            return self._answer(400, {"text": "Event field is required", "code": 12})
        with self.server.lock:
            self.server.events += events
            ack_id = self.server.batches
            self.server.batches += 1
            if channel:
                self.server.channels.add(channel)
        if self.server.stall:
            self.server.release.wait(30)
        answer: dict = {"text": "Success", "code": 0}
        if self.server.use_ack:
            answer["ackId"] = ack_id
            self.server.acked.setdefault(channel or "", set()).add(ack_id)
        self._answer(200, answer)

    def _ack(self, channel: str | None, query: dict) -> None:
        if not self.server.use_ack:
            return self._answer(400, {"text": "ACK is disabled", "code": 14})
        with self.server.lock:
            self.server.ack_queries += 1
            pending = self.server.acks_pending > 0
            self.server.acks_pending -= pending
        indexed = self.server.acked.get(channel or "", set())
        self._answer(200, {"acks": {str(a): (not pending and a in indexed) for a in query["acks"]}})

    def _answer(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except BrokenPipeError:  # the client gave up waiting (the stall's purpose)
            pass

    def log_message(self, *args: object) -> None:
        pass


def concatenated_json(body: str) -> list[dict]:
    """HEC accepts several JSON objects back to back in one request."""
    decoder, events, i = json.JSONDecoder(), [], 0
    while i < len(body):
        if body[i].isspace():
            i += 1
            continue
        obj, i = decoder.raw_decode(body, i)
        events.append(obj)
    return events


def start_hec() -> HecServer:
    server = HecServer()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
