"""The shared prompt prefix's KV on disk for llama.cpp, so that a new process (every
`logwarden triage` is one) restores it into its slots instead of prefilling it again.

Owns: the state file's key — everything that changes the KV or its layout: the model's bytes, the
LoRA's bytes, the prefix text, the number of slots (llama.cpp refuses a state saved with another
count: "n_stream mismatch") and their size, flash attention (it changes the V layout), the
llama.cpp build and this module's format — its name and its manifest (the full key and the file's sha256, checked
before every restore: llama.cpp itself checks only the magic and the shapes, not whose KV it is,
so a state of other weights or a damaged one would restore silently), and llama.cpp's slot
save/restore calls. xllamacpp 2026.10 does not expose those in Python; llama-server's
`POST /slots/{id}?action=save|restore` does, and the engine's listener is a unix socket in a
private 0700 folder, so they go there (files are named inside `slot_save_path`, never a path).
A file that fails any check is deleted; the caller prefills and saves anew.
Does not know: prompts (the caller passes the prefix text), where the model came from, engines.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logwarden.engine.embedded import sha256_of

FORMAT = 1  # of the key and manifest below; bump when either changes
_LOG = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PrefixKey:
    """What the KV of a prefix depends on; `digest` names its file."""

    model_sha256: str
    lora_sha256: str | None
    prefix_sha256: str
    slots: int
    ctx_per_slot: int
    flash_attn: bool
    llama_cpp: str
    format: int = FORMAT

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def text_sha256(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


class SlotStates:
    """State files in `folder` (llama.cpp's `slot_save_path`), saved and restored through the
    server's unix socket."""

    def __init__(self, folder: Path, sock: Path, *, timeout_s: float = 120.0):
        self.folder, self.sock, self.timeout_s = folder, sock, timeout_s

    def restore(self, key: PrefixKey, slots: range) -> int | None:
        """Restore the key's state into every slot in `slots`; the prefix's token count, or None
        when there is no usable state (a bad one is deleted on the way)."""
        name = _name(key)
        tokens = self._verified(key, name)
        if tokens is None:
            return None
        for slot in slots:
            answer = self._call(slot, "restore", name)
            if answer.get("n_restored") != tokens:
                _LOG.warning("llama.cpp refused the prefix state %s for slot %d (%s); prefilling anew",
                             name, slot, answer.get("error", answer))
                self.discard(key)
                return None
        return tokens

    def save(self, key: PrefixKey, slot: int) -> int | None:
        """Save `slot`'s KV as the key's state (file, then manifest, each renamed into place)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        name, partial = _name(key), f"{_name(key)}.{os.getpid()}.part"
        try:
            answer = self._call(slot, "save", partial)
            tokens = answer.get("n_saved")
            if not tokens:
                _LOG.warning("llama.cpp did not save the prefix state (%s)", answer.get("error", answer))
                return None
            manifest = {"key": key.as_dict(), "digest": key.digest, "tokens": tokens,
                        "sha256": sha256_of([self.folder / partial])}
            (self.folder / partial).rename(self.folder / name)
            _write_atomically(self.folder / f"{name}.json", json.dumps(manifest, indent=1))
            return tokens
        finally:
            (self.folder / partial).unlink(missing_ok=True)

    def discard(self, key: PrefixKey) -> None:
        for path in (self.folder / _name(key), self.folder / f"{_name(key)}.json"):
            path.unlink(missing_ok=True)

    def _verified(self, key: PrefixKey, name: str) -> int | None:
        state, manifest_path = self.folder / name, self.folder / f"{name}.json"
        if not state.is_file():
            return None
        try:
            manifest = json.loads(manifest_path.read_text())
            good = (manifest["key"] == key.as_dict() and manifest["sha256"] == sha256_of([state])
                    and int(manifest["tokens"]) > 0)
        except (OSError, ValueError, KeyError, TypeError):
            good = False
        if not good:
            _LOG.warning("the prefix state %s does not match its manifest or this model; prefilling anew", state)
            self.discard(key)
            return None
        return int(manifest["tokens"])

    def _call(self, slot: int, action: str, filename: str) -> dict[str, Any]:
        """llama-server's slot action; its JSON answer ({"error": …} when it refused)."""
        connection = _UnixHTTPConnection(self.sock, self.timeout_s)
        try:
            connection.request("POST", f"/slots/{slot}?action={action}", json.dumps({"filename": filename}),
                               {"Content-Type": "application/json"})
            body = connection.getresponse().read()
        except OSError as exc:
            return {"error": f"the server's socket: {exc}"}
        finally:
            connection.close()
        try:
            return json.loads(body)
        except ValueError:
            return {"error": body[:200].decode("utf-8", "replace")}


def _name(key: PrefixKey) -> str:
    return f"prefix-{key.digest[:32]}.bin"


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(f"{path.name}.{os.getpid()}.part")
    partial.write_text(text)
    partial.rename(path)


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: Path, timeout_s: float):
        super().__init__("localhost", timeout=timeout_s)
        self.socket_path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.socket_path)
