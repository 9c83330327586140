"""Model resolution and loading: `--model`, `--quant`, `--adapter`, threads, device, attention.

Owns: turning a spec (`embedded`, `embedded-1.5b`, a local folder, a `.gguf` file, a Hugging Face
id already in the local cache) into weights on a device in the requested precision, with an
optional peft adapter, and wrapping them in a `LocalEngine`. Everything is offline; a missing
model raises `ModelError` saying how to get it. Does not know: generation, prompts, logs.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from logwarden.adapters import resolve_adapter
from logwarden.errors import ConfigError, ModelError
from logwarden.engine.embedded import PACKS, ensure_converted
from logwarden.engine.attention import use_gqa_decode
from logwarden.engine.local import EngineInfo, LocalEngine

QUANTS = ("auto", "none", "fp32", "bf16", "fp16", "int8", "nf4")
_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True, slots=True)
class ModelSource:
    spec: str
    kind: str  # "embedded" | "folder" | "gguf" | "hub"
    path: Path  # a folder `from_pretrained` can read (for gguf: the file's folder)
    gguf_file: str | None = None
    sha256: str | None = None

    @property
    def name(self) -> str:
        return self.spec if self.kind in ("embedded", "hub") else self.path.name


def resolve_model(spec: str, *, cache_dir: Path | None = None) -> ModelSource:
    """Find the weights for `spec`; embedded models are verified and converted on first use."""
    if spec in PACKS:
        return _embedded_source(spec, cache_dir)
    path = Path(spec).expanduser()
    if spec.endswith(".gguf"):
        return _gguf_source(spec, path)
    if path.exists() or spec.startswith((".", "/", "~")):
        return _folder_source(spec, path)
    return _hub_source(spec)


def _embedded_source(spec: str, cache_dir: Path | None) -> ModelSource:
    if cache_dir is None:  # the caller owns the settings (LOGWARDEN_HOME); the engine reads none
        raise ConfigError(f"--model {spec} is assembled into a model cache folder; pass cache_dir "
                          f"(the CLI uses LOGWARDEN_HOME/models).")
    pack = PACKS[spec]
    folder = ensure_converted(pack, cache_dir)
    return ModelSource(spec=spec, kind="embedded", path=folder, sha256=pack.sha256)


def _gguf_source(spec: str, path: Path) -> ModelSource:
    if not path.is_file():
        raise ModelError(f"GGUF file {path} does not exist. Fix: give the path of a downloaded .gguf "
                         f"file, or use --model embedded.")
    return ModelSource(spec=spec, kind="gguf", path=path.parent, gguf_file=path.name)


def _folder_source(spec: str, path: Path) -> ModelSource:
    if not (path / "config.json").is_file():
        raise ModelError(f"{path} is not a model folder (no config.json). Fix: point --model at a "
                         f"folder saved with save_pretrained, a .gguf file, or use --model embedded.")
    return ModelSource(spec=spec, kind="folder", path=path)


def _hub_source(spec: str) -> ModelSource:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        folder = snapshot_download(spec, local_files_only=True)
    except (LocalEntryNotFoundError, HFValidationError, OSError) as exc:
        raise ModelError(f"Model {spec!r} is not a local folder and not in the local Hugging Face cache "
                         f"(logwarden works offline). Fix: on a connected machine run "
                         f"`hf download {spec}` and copy the cache (~/.cache/huggingface), or use "
                         f"--model embedded.") from exc
    return ModelSource(spec=spec, kind="hub", path=Path(folder))


# ---- precision, device, attention ------------------------------------------------------------

def resolve_device(device: str | None) -> torch.device:
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"--device {device} was requested but torch sees no CUDA GPU. Fix: use --device cpu "
                          f"or install a CUDA build of torch.")
    return torch.device(device)


def resolve_quant(quant: str, device: torch.device) -> str:
    """`auto` → nf4 on CUDA, fp32 on CPU (no fast bf16 here); `none` → the device's plain dtype."""
    if quant not in QUANTS:
        raise ConfigError(f"--quant {quant!r} is not one of {', '.join(QUANTS)}.")
    if quant == "auto":
        return "nf4" if device.type == "cuda" else "fp32"
    if quant == "none":
        return "bf16" if device.type == "cuda" else "fp32"
    return quant


def resolve_attention(attn: str | None, device: torch.device) -> str:
    if attn:
        return attn
    if device.type == "cuda" and importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2"
    return "sdpa"


def quantization_config(quant: str) -> Any | None:
    if quant not in ("int8", "nf4"):
        return None
    if importlib.util.find_spec("bitsandbytes") is None:
        raise ModelError(f"--quant {quant} needs bitsandbytes. Fix: pip install 'bitsandbytes>=0.45' "
                         f"(or pip install 'logwarden[quant]'), or use --quant fp32.")
    from transformers import BitsAndBytesConfig

    if quant == "int8":
        return BitsAndBytesConfig(load_in_8bit=True)
    # the QLoRA recipe: NF4 weights, double-quantized constants, bf16 compute
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                              bnb_4bit_compute_dtype=torch.bfloat16)


def set_threads(threads: int | None) -> None:
    """CPU threads for torch. Under contention fewer threads can be faster; see docs/ENGINE.md."""
    if threads is not None:
        if threads < 1:
            raise ConfigError(f"--threads must be ≥ 1, got {threads}.")
        torch.set_num_threads(threads)


# ---- loading ---------------------------------------------------------------------------------

def load_model(source: ModelSource, *, quant: str, device: torch.device, attention: str) -> Any:
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {"attn_implementation": attention}
    qconfig = quantization_config(quant)
    if qconfig is not None:
        kwargs |= {"quantization_config": qconfig, "device_map": {"": str(device)}}
    else:
        kwargs["dtype"] = _DTYPES[quant]
    if source.gguf_file:
        kwargs["gguf_file"] = source.gguf_file
    try:
        model = AutoModelForCausalLM.from_pretrained(source.path, local_files_only=True, **kwargs)
    except (OSError, ValueError, ImportError) as exc:
        raise ModelError(f"Loading {source.spec} ({source.path}) failed: {exc}. Fix: check the folder is "
                         f"complete, or re-create the cache by deleting it.") from exc
    return model if qconfig is not None else model.to(device)


def load_tokenizer(source: ModelSource) -> Any:
    from transformers import AutoTokenizer

    extra = {"gguf_file": source.gguf_file} if source.gguf_file else {}
    return AutoTokenizer.from_pretrained(source.path, local_files_only=True, **extra)


def apply_adapter(model: Any, adapter: str | os.PathLike, *, merge: bool = False, quantized: bool = False) -> Any:
    """A peft (LoRA) adapter on top of any base; merged into the weights only when unquantized."""
    path = Path(adapter).expanduser()
    if not (path / "adapter_config.json").is_file():
        raise ModelError(f"Adapter {path} not found (no adapter_config.json). Fix: give the folder written "
                         f"by `logwarden train` / peft's save_pretrained, or drop --adapter.")
    from peft import PeftModel

    wrapped = PeftModel.from_pretrained(model, str(path)).eval()
    if merge and quantized:
        raise ConfigError("An adapter cannot be merged into 4/8-bit weights. Fix: drop merge or use --quant fp32/bf16.")
    return wrapped.merge_and_unload() if merge else wrapped


def load_engine(*, model: str = "embedded", adapter: str | None = None, quant: str = "auto",
                threads: int | None = None, device: str | None = None, max_batch: int = 8,
                attn: str | None = None, merge_adapter: bool | None = None, cache_dir: Path | None = None,
                cache_kind: str | None = None, decoder: str | None = None) -> LocalEngine:
    """`cache_kind`/`decoder` None = what measured fastest on the device: static cache and decode
    steps replayed from CUDA graphs on CUDA (eager steps under flash_attention_2, which the graphs'
    4-D mask does not suit), dynamic cache and eager steps on CPU (docs/ENGINE.md).
    `merge_adapter` None = merge the adapter into unquantized weights (the LoRA matmuls then cost
    nothing per token) and keep it separate on 4/8-bit bases, where merging is impossible."""
    set_threads(threads)
    adapter = resolve_adapter(model, adapter)  # None → the model's shipped default, "none" → no adapter
    dev = resolve_device(device)
    source = resolve_model(model, cache_dir=cache_dir)
    mode = resolve_quant(quant, dev)
    attention = resolve_attention(attn, dev)
    weights = load_model(source, quant=mode, device=dev, attention=attention)
    quantized = mode in ("int8", "nf4")
    if dev.type == "cuda":  # decode steps read the KV cache once (engine/attention.py)
        attention = use_gqa_decode(weights)
    if adapter:
        merge = not quantized if merge_adapter is None else merge_adapter
        weights = apply_adapter(weights, adapter, merge=merge, quantized=quantized)
    info = EngineInfo(model_name=source.name, path=str(source.path / (source.gguf_file or "")),
                      sha256=source.sha256, quant=mode, attention=attention,
                      adapter=str(adapter) if adapter else None)
    on_cuda = dev.type == "cuda"
    return LocalEngine(weights, load_tokenizer(source), info=info, max_batch=max_batch,
                       cache_kind=cache_kind or ("static" if on_cuda else "dynamic"),
                       decoder=decoder or _default_decoder(on_cuda, attention))


def _default_decoder(on_cuda: bool, attention: str) -> str:
    """Captured graphs hand the model a 4-D mask, which flash_attention_2 does not take."""
    return "graphs" if on_cuda and attention != "flash_attention_2" else "eager"
