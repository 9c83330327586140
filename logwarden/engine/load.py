"""Model resolution, engine choice and loading: `--engine`, `--model`, `--quant`, `--adapter`,
threads, device, attention.

Owns: which engine runs a model (`choose_engine`: llama.cpp for GGUF models on CPU, transformers
on CUDA, for non-GGUF weights and whenever a transformers-only option is asked for); turning a
spec (`embedded`, `embedded-1.5b`, a local folder, a `.gguf` file, a Hugging Face id already in
the local cache) into what that engine loads — for llama.cpp either the derived Q4_0 GGUF with
the adapter merged (`q4_0`, `gguf_derive.py`) or the verified GGUF as shipped with the adapter
converted to a GGUF LoRA (`q4_k_m`), and the folder its prefix KV states live in; for
transformers weights on a device in the requested precision with an optional peft adapter (adapters
are paths the caller resolved; None = the plain model). Everything is offline; a missing model raises `ModelError` saying
how to get it. torch is imported only on the transformers path. Does not know: generation,
prompts, logs.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from logwarden.engine.api import MAX_BATCH
from logwarden.engine.embedded import PACKS, ensure_converted, ensure_gguf
from logwarden.errors import ConfigError, ModelError

if TYPE_CHECKING:
    import torch

    from logwarden.engine.llamacpp import LlamaCppEngine
    from logwarden.engine.local import LocalEngine

QUANTS = ("auto", "none", "fp32", "bf16", "fp16", "int8", "nf4")
# llama.cpp's weights: q4_0 = derived from the GGUF (block weights Q4_0, the adapter merged);
# q4_k_m = the GGUF as shipped (the embedded files are Q4_K_M) with the adapter applied at run time
LLAMACPP_QUANTS = ("q4_0", "q4_k_m")
# `auto` on llama.cpp: the derived Q4_0 where the shipped file's types miss llama.cpp's repacked
# CPU kernels — the 0.5B's 896-wide tensors made llama-quantize fall back to Q5_0/Q8_0 (prefill
# ~1.5x faster as Q4_0, docs/ENGINE.md); other GGUFs (the 1.5B's real K-quants, yours) as shipped.
DERIVED_BY_DEFAULT = ("embedded",)
ENGINE_QUANTS = (*QUANTS, *LLAMACPP_QUANTS)  # every `--quant` of analyze, watch, triage, eval
ENGINES = ("auto", "transformers", "llamacpp")
LLAMACPP_SLOTS = 4  # parallel sequences on CPU (docs/ENGINE.md: measured against 1, 2 and 8)
HEADERS = "headers"  # under the model cache: a GGUF's scalar metadata and tokenizer, by its sha256
PREFIX_STATES = "prefix-kv"  # under the model cache: the system prefix's KV, one file per model+adapter+prefix


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
    pack = PACKS[spec]
    folder = ensure_converted(pack, _cache(cache_dir, f"--model {spec} is assembled"))
    return ModelSource(spec=spec, kind="embedded", path=folder, sha256=pack.sha256)


def _cache(cache_dir: Path | None, what: str) -> Path:
    if cache_dir is None:  # the caller owns the settings (LOGWARDEN_HOME); the engine reads none
        raise ConfigError(f"{what} once into a model cache folder; pass cache_dir (the CLI uses "
                          f"LOGWARDEN_HOME/models).")
    return cache_dir


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
    import torch

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
    import torch

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
        import torch

        _check_threads(threads)
        torch.set_num_threads(threads)


def _check_threads(threads: int | None) -> None:
    if threads is not None and threads < 1:
        raise ConfigError(f"--threads must be ≥ 1, got {threads}.")


# ---- transformers weights ----------------------------------------------------------------

def load_model(source: ModelSource, *, quant: str, device: torch.device, attention: str) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    kwargs: dict[str, Any] = {"attn_implementation": attention}
    qconfig = quantization_config(quant)
    if qconfig is not None:
        kwargs |= {"quantization_config": qconfig, "device_map": {"": str(device)}}
    else:
        kwargs["dtype"] = dtypes[quant]
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


# ---- choosing the engine -----------------------------------------------------------------

def is_gguf_spec(model: str) -> bool:
    return model in PACKS or model.endswith(".gguf")


def choose_engine(engine: str, *, model: str, quant: str = "auto", device: str | None = None) -> str:
    """`auto` = llama.cpp for a GGUF model on the CPU (and whenever a llama.cpp `--quant` is asked
    for); transformers for other weights, on CUDA, and when a transformers-only `--quant` is."""
    if engine not in ENGINES:
        raise ConfigError(f"--engine {engine!r} is not one of {', '.join(ENGINES)}.")
    if engine == "llamacpp" or (engine == "auto" and quant in LLAMACPP_QUANTS):
        _check_llamacpp_options(model, quant, device)
        return "llamacpp"
    if quant in LLAMACPP_QUANTS:
        raise ConfigError(f"--quant {quant} chooses the GGUF weights llama.cpp runs; the transformers engine "
                          f"takes {', '.join(QUANTS)}. Fix: use --engine llamacpp (or auto), or another --quant.")
    if engine == "transformers":
        return engine
    transformers_only = not is_gguf_spec(model) or quant != "auto" or (device or "cpu") != "cpu"
    return "transformers" if transformers_only or (device is None and _cuda_usable()) else "llamacpp"


def _check_llamacpp_options(model: str, quant: str, device: str | None) -> None:
    if not is_gguf_spec(model):
        raise ConfigError(f"--engine llamacpp runs GGUF models (--model embedded, embedded-1.5b or a .gguf file), "
                          f"not {model!r}. Fix: give a .gguf file or use --engine transformers.")
    if quant not in ("auto", *LLAMACPP_QUANTS):
        raise ConfigError(f"--quant {quant} is a transformers option; llama.cpp takes auto, "
                          f"{', '.join(LLAMACPP_QUANTS)}. Fix: drop --quant, or use --engine transformers.")
    if (device or "cpu") != "cpu":
        raise ConfigError(f"--engine llamacpp runs on the CPU here, not on {device}. Fix: use --engine transformers.")


def _cuda_usable() -> bool:
    """Without an NVIDIA driver there is no CUDA: answered without importing torch."""
    if not (Path("/proc/driver/nvidia/version").exists() or Path("/dev/nvidia0").exists()):
        return False
    import torch

    return torch.cuda.is_available()


# ---- loading ---------------------------------------------------------------------------------

def load_engine(*, engine: str = "auto", model: str = "embedded", adapter: str | None = None,
                quant: str = "auto", threads: int | None = None, device: str | None = None, max_batch: int = MAX_BATCH,
                slots: int | None = None, attn: str | None = None, merge_adapter: bool | None = None,
                cache_dir: Path | None = None, cache_kind: str | None = None,
                decoder: str | None = None, draft_model: str | None = None,
                draft_tokens: int = 8) -> LocalEngine | LlamaCppEngine:
    """The engine `choose_engine` picks, loaded. `slots` (llama.cpp) None = min(max_batch, 4).
    `draft_model`: speculative decoding, llama.cpp only (the transformers engine's own loop has none)."""
    if choose_engine(engine, model=model, quant=quant, device=device) == "llamacpp":
        return load_llamacpp(model=model, adapter=adapter, quant=quant, threads=threads, cache_dir=cache_dir,
                             slots=slots or min(max_batch, LLAMACPP_SLOTS), draft_model=draft_model,
                             draft_tokens=draft_tokens)
    if draft_model:
        raise ConfigError("--draft-model runs on the llama.cpp engine; the transformers engine has no speculative "
                          "decoding. Fix: use --engine llamacpp, or drop --draft-model.")
    return load_transformers(model=model, adapter=adapter, quant=quant, threads=threads, device=device,
                             max_batch=max_batch, attn=attn, merge_adapter=merge_adapter, cache_dir=cache_dir,
                             cache_kind=cache_kind, decoder=decoder)


def resolve_gguf(spec: str, *, cache_dir: Path | None = None) -> ModelSource:
    """The GGUF file llama.cpp loads: the embedded one assembled and sha256-checked, or a path."""
    if spec not in PACKS:
        return _gguf_source(spec, Path(spec).expanduser())
    pack = PACKS[spec]
    file = ensure_gguf(pack, _cache(cache_dir, f"--model {spec} is assembled"))
    return ModelSource(spec=spec, kind="embedded", path=file.parent, gguf_file=file.name, sha256=pack.sha256)


def load_llamacpp(*, model: str = "embedded", adapter: str | None = None, quant: str = "auto",
                  threads: int | None = None, slots: int = LLAMACPP_SLOTS, ctx_per_slot: int = 4096,
                  cache_dir: Path | None = None, draft_model: str | None = None,
                  draft_tokens: int = 8) -> LlamaCppEngine:
    """`quant` q4_0: the derived GGUF, the adapter in its weights (no LoRA at run time); q4_k_m: the
    GGUF as shipped + the adapter as a GGUF LoRA; auto: `DERIVED_BY_DEFAULT` says which.
    `draft_model` (a GGUF spec of the same vocabulary, e.g. `embedded` for `embedded-1.5b`) drafts
    up to `draft_tokens` tokens a step for the model to check (speculative decoding)."""
    from logwarden.engine.llamacpp import LlamaCppConfig, LlamaCppEngine

    _check_threads(threads)
    adapter_dir = Path(adapter).expanduser() if adapter else None
    common = {"threads": threads, "slots": slots, "ctx_per_slot": ctx_per_slot,
              "prefix_state_dir": cache_dir / PREFIX_STATES if cache_dir else None,
              "header_cache_dir": cache_dir / HEADERS if cache_dir else None,
              "draft_gguf": _draft_gguf(draft_model, cache_dir) if draft_model else None,
              "draft_tokens": draft_tokens}
    if llamacpp_weights(model, quant) == "q4_0":
        derived = _derived_gguf(model, adapter_dir, _cache(cache_dir, "A derived Q4_0 model is written"))
        return LlamaCppEngine(LlamaCppConfig(gguf=derived.path, **common), model_name=_name(model),
                              sha256=derived.sha256, adapter_name=adapter, adapter_merged=adapter_dir is not None)
    source = resolve_gguf(model, cache_dir=cache_dir)
    gguf = source.path / source.gguf_file
    lora = _gguf_lora(adapter_dir, gguf, cache_dir) if adapter_dir else None
    return LlamaCppEngine(LlamaCppConfig(gguf=gguf, lora=lora, **common), model_name=source.name,
                          sha256=source.sha256, adapter_name=adapter)


def _draft_gguf(spec: str, cache_dir: Path | None) -> Path:
    """The draft model's file, plain (no adapter: it only proposes; the model decides): for an
    embedded model the weights `--quant auto` would run, a .gguf path as it is."""
    if not is_gguf_spec(spec):
        raise ConfigError(f"--draft-model takes a GGUF model (embedded, embedded-1.5b or a .gguf file), not {spec!r}.")
    if llamacpp_weights(spec, "auto") == "q4_0":
        return _derived_gguf(spec, None, _cache(cache_dir, "A derived Q4_0 model is written")).path
    source = resolve_gguf(spec, cache_dir=cache_dir)
    return source.path / (source.gguf_file or "")


def llamacpp_weights(model: str, quant: str) -> str:
    """q4_0 or q4_k_m for `--quant` (auto: the default for this model)."""
    if quant in LLAMACPP_QUANTS:
        return quant
    return "q4_0" if model in DERIVED_BY_DEFAULT else "q4_k_m"


def _derived_gguf(model: str, adapter: Path | None, cache_dir: Path):
    """The derived file: from the cache without touching the base when it is there (the embedded
    base's sha256 is pinned), else derived now from the verified base."""
    from logwarden.engine.embedded import sha256_of
    from logwarden.engine.gguf_derive import ensure_derived, find_derived

    if model in PACKS:
        pinned = PACKS[model].sha256
        if found := find_derived(base_sha256=pinned, adapter=adapter, cache_dir=cache_dir):
            return found
    source = resolve_gguf(model, cache_dir=cache_dir)
    base = source.path / source.gguf_file
    return ensure_derived(base, base_sha256=source.sha256 or sha256_of([base]), adapter=adapter, cache_dir=cache_dir)


def _name(model: str) -> str:
    return model if model in PACKS else Path(model).name


def _gguf_lora(adapter: Path, gguf: Path, cache_dir: Path | None) -> Path:
    from logwarden.engine.gguf_lora import ensure_gguf_lora
    from logwarden.engine.gguf_meta import read_metadata

    metadata = read_metadata(gguf)
    arch = metadata.get("general.architecture", "?")
    return ensure_gguf_lora(adapter, arch=arch, block_count=int(metadata.get(f"{arch}.block_count", 0)),
                            cache_dir=_cache(cache_dir, "A peft adapter for llama.cpp is converted to a GGUF LoRA"))


def load_transformers(*, model: str = "embedded", adapter: str | None = None, quant: str = "auto",
                      threads: int | None = None, device: str | None = None, max_batch: int = MAX_BATCH,
                      attn: str | None = None, merge_adapter: bool | None = None, cache_dir: Path | None = None,
                      cache_kind: str | None = None, decoder: str | None = None) -> LocalEngine:
    """`cache_kind`/`decoder` None = what measured fastest on the device: static cache and decode
    steps replayed from CUDA graphs on CUDA (eager steps under flash_attention_2, which the graphs'
    4-D mask does not suit), dynamic cache and eager steps on CPU (docs/ENGINE.md).
    `merge_adapter` None = merge the adapter into unquantized weights (the LoRA matmuls then cost
    nothing per token) and keep it separate on 4/8-bit bases, where merging is impossible."""
    require_transformers()
    from logwarden.engine.attention import use_gqa_decode
    from logwarden.engine.local import EngineInfo, LocalEngine

    set_threads(threads)
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
                      adapter=str(adapter) if adapter else None, extra={"engine": "transformers"})
    on_cuda = dev.type == "cuda"
    return LocalEngine(weights, load_tokenizer(source), info=info, max_batch=max_batch,
                       cache_kind=cache_kind or ("static" if on_cuda else "dynamic"),
                       decoder=decoder or _default_decoder(on_cuda, attention))


def require_transformers() -> None:
    """The transformers engine is an optional install (`logwarden[transformers]`)."""
    missing = [name for name in ("torch", "transformers", "peft", "xgrammar") if importlib.util.find_spec(name) is None]
    if missing:
        raise ModelError(f"The transformers engine needs {', '.join(missing)}, which are not installed. Fix: "
                         f"`make setup-transformers` (CPU torch), or pip install torch first (CPU or CUDA build) "
                         f"and then pip install 'logwarden[transformers]'; or use --engine llamacpp for a GGUF model.")


def _default_decoder(on_cuda: bool, attention: str) -> str:
    """Captured graphs hand the model a 4-D mask, which flash_attention_2 does not take."""
    return "graphs" if on_cuda and attention != "flash_attention_2" else "eager"
