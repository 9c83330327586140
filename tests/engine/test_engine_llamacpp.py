"""The code around the llama.cpp engine, fast: GGUF metadata, token counting, the peft → GGUF LoRA
converter, engine choice, sampling and answer-chunk handling, the assembled-GGUF cache, the CLI
option. No model is loaded here (tests/engine/test_engine_llamacpp_model.py runs the real one)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _gguf_helpers import write_safetensors as _write_safetensors
from _repo import REPO
from click.testing import CliRunner

from logwarden.cli.main import main
from logwarden.engine import embedded, gguf_lora, load
from logwarden.engine.api import Sampling
from logwarden.engine.embedded import PACKS
from logwarden.engine.gguf_meta import read_metadata
from logwarden.engine.gguf_tokenizer import token_counter
from logwarden.errors import ConfigError, ModelError

ROOT = REPO
SHIPPED_ADAPTER = ROOT / "logwarden" / "adapters" / "security-v2"


# ---- GGUF metadata -----------------------------------------------------------------------

def _write_gguf(path: Path, arch: str = "qwen2", kv: dict | None = None) -> Path:
    import gguf

    writer = gguf.GGUFWriter(path, arch=arch)
    for key, value in (kv or {}).items():
        writer.add_key_value(key, *value)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_metadata_reader_reads_every_value_type(tmp_path):
    import gguf

    t = gguf.GGUFValueType
    kv = {"x.u32": (7, t.UINT32), "x.i64": (-3, t.INT64), "x.f32": (0.5, t.FLOAT32), "x.bool": (True, t.BOOL),
          "x.str": ("héllo ✓", t.STRING), "x.ints": ([1, 2, 3], t.ARRAY, t.INT32),
          "x.strs": (["a b", "Ġc", "<|im_end|>"], t.ARRAY, t.STRING)}
    meta = read_metadata(_write_gguf(tmp_path / "m.gguf", kv=kv))
    assert meta["general.architecture"] == "qwen2"
    assert (meta["x.u32"], meta["x.i64"], meta["x.bool"], meta["x.str"]) == (7, -3, True, "héllo ✓")
    assert meta["x.f32"] == pytest.approx(0.5) and meta["x.ints"] == [1, 2, 3]
    assert meta["x.strs"] == ["a b", "Ġc", "<|im_end|>"]


@pytest.mark.parametrize("content", [b"", b"not a model at all", b"GGUF\x03\x00\x00\x00\xff"])
def test_a_file_that_is_not_a_gguf_is_a_model_error(tmp_path, content):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(content)
    with pytest.raises(ModelError, match="not a readable GGUF"):
        read_metadata(bad)


def test_the_embedded_models_metadata_is_read_from_the_verified_file():
    from logwarden.app.config import get_settings

    meta = read_metadata(embedded.ensure_gguf(PACKS["embedded"], get_settings().model_cache))
    assert meta["general.architecture"] == "qwen2" and meta["qwen2.block_count"] == 24
    assert len(meta["tokenizer.ggml.tokens"]) == 151_936 and meta["tokenizer.ggml.pre"] == "qwen2"


# ---- token counting ----------------------------------------------------------------------

def _toy_vocab(pre: str = "qwen2") -> dict:
    """A byte-level BPE that knows 'ab', 'abc' and one control token."""
    tokens = ["a", "b", "c", "Ġ", "ab", "abc", "1", "2", "<|im_end|>"]
    return {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": pre, "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.token_type": [1] * 8 + [3], "tokenizer.ggml.merges": ["a b", "ab c"]}


def test_bpe_counts_merges_digits_and_special_tokens_whole():
    counter = token_counter(_toy_vocab())
    assert counter.exact and counter.kind == "bpe/qwen2"
    assert counter.count("abc") == 1 and counter.count("ab") == 1 and counter.count("ba") == 2
    assert counter.count("12") == 2  # qwen2 splits digits one by one
    assert counter.count("abc<|im_end|>") == 2  # a control token is one token, never split


def test_unknown_vocabularies_are_estimated_and_say_so():
    sentencepiece = {"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": ["a"]}
    counter = token_counter(sentencepiece)
    assert not counter.exact and counter.count("x" * 35) == 10
    assert not token_counter(_toy_vocab(pre="some-new-pre")).exact


# ---- peft → GGUF LoRA -------------------------------------------------------------------

def _adapter(tmp_path: Path, *, dtype: str = "F32", config: dict | None = None,
             layers=(0, 1), modules=("self_attn.q_proj", "mlp.down_proj"), rank: int = 4) -> Path:
    rng = np.random.default_rng(0)
    shapes = {"self_attn.q_proj": (16, 16), "mlp.down_proj": (16, 32), "self_attn.v_proj": (8, 16)}  # (out, in)
    tensors = {}
    for layer in layers:
        for module in modules:
            out, inp = shapes[module]
            prefix = f"base_model.model.model.layers.{layer}.{module}"
            tensors[f"{prefix}.lora_A.weight"] = rng.normal(size=(rank, inp)).astype(np.float32)
            tensors[f"{prefix}.lora_B.weight"] = rng.normal(size=(out, rank)).astype(np.float32)
    folder = tmp_path / "adapter"
    folder.mkdir(exist_ok=True)
    _write_safetensors(folder / "adapter_model.safetensors", tensors, dtype)
    base = {"peft_type": "LORA", "r": rank, "lora_alpha": 8, "use_rslora": False, "use_dora": False,
            "bias": "none", "modules_to_save": None, "alpha_pattern": {}, "rank_pattern": {}}
    (folder / "adapter_config.json").write_text(json.dumps(base | (config or {})))
    return folder


def _gguf_tensors(path: Path) -> tuple[dict[str, np.ndarray], float]:
    import gguf

    reader = gguf.GGUFReader(path)
    alpha = float(reader.fields["adapter.lora.alpha"].contents())
    assert reader.fields["general.type"].contents() == "adapter" and reader.fields["adapter.type"].contents() == "lora"
    return {t.name: np.array(t.data).reshape(list(reversed(t.shape.tolist()))) for t in reader.tensors}, alpha


def _peft_delta(folder: Path, module: str) -> np.ndarray:
    """ΔW exactly as peft computes it: scaling · B @ A."""
    cfg = json.loads((folder / "adapter_config.json").read_text())
    tensors = gguf_lora.read_safetensors(folder / "adapter_model.safetensors")
    a = tensors[f"base_model.model.{module}.lora_A.weight"]
    b = tensors[f"base_model.model.{module}.lora_B.weight"]
    alpha = next((v for k, v in cfg["alpha_pattern"].items() if module.endswith(k)), cfg["lora_alpha"])
    rank = a.shape[0]
    return (alpha / math.sqrt(rank) if cfg["use_rslora"] else alpha / rank) * (b @ a)


def _llama_cpp_delta(tensors: dict[str, np.ndarray], alpha: float, name: str) -> np.ndarray:
    """ΔW as llama.cpp applies a GGUF LoRA: alpha / rank · B @ A (rank from the tensor)."""
    a, b = tensors[f"{name}.lora_a"], tensors[f"{name}.lora_b"]
    return alpha / a.shape[0] * (b @ a)


@pytest.mark.parametrize("dtype", ["F32", "F16", "BF16"])
@pytest.mark.parametrize("config", [{}, {"use_rslora": True}, {"alpha_pattern": {"down_proj": 32}}],
                         ids=["plain", "rslora", "alpha_pattern"])
def test_converted_lora_applies_the_same_update_as_peft(tmp_path, dtype, config):
    folder = _adapter(tmp_path, dtype=dtype, config=config)
    out = gguf_lora.ensure_gguf_lora(folder, arch="qwen2", block_count=2, cache_dir=tmp_path / "cache")
    tensors, alpha = _gguf_tensors(out)
    assert alpha == 8.0 and len(tensors) == 8  # 2 layers × 2 modules × (a, b)
    for layer in (0, 1):
        for hf, name in (("self_attn.q_proj", "attn_q"), ("mlp.down_proj", "ffn_down")):
            want = _peft_delta(folder, f"model.layers.{layer}.{hf}")
            got = _llama_cpp_delta(tensors, alpha, f"blk.{layer}.{name}.weight")
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_conversion_is_cached_by_the_adapters_bytes(tmp_path):
    folder = _adapter(tmp_path)
    cache = tmp_path / "cache"
    first = gguf_lora.ensure_gguf_lora(folder, arch="qwen2", block_count=2, cache_dir=cache)
    stamp = first.stat().st_mtime_ns
    assert gguf_lora.ensure_gguf_lora(folder, arch="qwen2", block_count=2, cache_dir=cache) == first
    assert first.stat().st_mtime_ns == stamp  # not converted again
    _adapter(tmp_path, rank=2)  # retrained: new bytes, new file
    second = gguf_lora.ensure_gguf_lora(folder, arch="qwen2", block_count=2, cache_dir=cache)
    assert second != first and second.is_file()
    assert not [p for p in (cache / "adapters").iterdir() if p.name.endswith(".part")]


def test_the_shipped_adapter_converts_every_layer(tmp_path):
    cfg = json.loads((SHIPPED_ADAPTER / "adapter_config.json").read_text())
    out = gguf_lora.ensure_gguf_lora(SHIPPED_ADAPTER, arch="qwen2", block_count=24, cache_dir=tmp_path)
    tensors, alpha = _gguf_tensors(out)
    assert alpha == cfg["lora_alpha"]
    assert len(tensors) == 24 * len(cfg["target_modules"]) * 2
    assert {t.rsplit(".", 1)[-1] for t in tensors} == {"lora_a", "lora_b"}
    assert tensors["blk.23.ffn_gate.weight.lora_a"].shape == (cfg["r"], 896)


@pytest.mark.parametrize("config, says", [
    ({"use_dora": True}, "DoRA"),
    ({"modules_to_save": ["lm_head"]}, "modules_to_save"),
    ({"bias": "lora_only"}, "bias"),
    ({"peft_type": "IA3"}, "LORA"),
])
def test_adapters_a_gguf_lora_cannot_express_are_refused(tmp_path, config, says):
    folder = _adapter(tmp_path, config=config)
    with pytest.raises(ModelError, match=says):
        gguf_lora.ensure_gguf_lora(folder, arch="qwen2", block_count=2, cache_dir=tmp_path / "cache")


def test_wrong_architecture_or_layers_are_refused(tmp_path):
    folder = _adapter(tmp_path)
    with pytest.raises(ModelError, match="'llama' GGUF is not supported"):
        gguf_lora.ensure_gguf_lora(folder, arch="llama", block_count=2, cache_dir=tmp_path / "c1")
    with pytest.raises(ModelError, match="no counterpart"):  # layer 1 does not exist in a 1-layer model
        gguf_lora.ensure_gguf_lora(folder, arch="qwen2", block_count=1, cache_dir=tmp_path / "c2")
    (folder / "adapter_model.safetensors").unlink()
    with pytest.raises(ModelError, match="missing adapter_model.safetensors"):
        gguf_lora.ensure_gguf_lora(folder, arch="qwen2", block_count=2, cache_dir=tmp_path / "c3")


# ---- engine choice --------------------------------------------------------------------------

@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(load, "_cuda_usable", lambda: False)


@pytest.mark.parametrize("model, quant, device, want", [
    ("embedded", "auto", None, "llamacpp"),
    ("embedded-1.5b", "auto", "cpu", "llamacpp"),
    ("/models/x.gguf", "auto", None, "llamacpp"),
    ("/models/qwen-folder", "auto", None, "transformers"),
    ("Qwen/Qwen2.5-7B-Instruct", "auto", None, "transformers"),
    ("embedded", "fp32", None, "transformers"),  # a transformers-only option asks for transformers
    ("embedded", "auto", "cuda", "transformers"),
])
def test_auto_runs_gguf_models_on_llamacpp_on_the_cpu(no_cuda, model, quant, device, want):
    assert load.choose_engine("auto", model=model, quant=quant, device=device) == want


def test_auto_prefers_transformers_when_cuda_is_there(monkeypatch):
    monkeypatch.setattr(load, "_cuda_usable", lambda: True)
    assert load.choose_engine("auto", model="embedded") == "transformers"
    assert load.choose_engine("auto", model="embedded", device="cpu") == "llamacpp"


@pytest.mark.parametrize("model, quant, device, says", [
    ("/models/qwen-folder", "auto", None, "runs GGUF models"),
    ("embedded", "nf4", None, "is a transformers option"),
    ("embedded", "auto", "cuda", "runs on the CPU"),
])
def test_llamacpp_refuses_what_it_cannot_do(model, quant, device, says):
    with pytest.raises(ConfigError, match=says):
        load.choose_engine("llamacpp", model=model, quant=quant, device=device)


def test_unknown_engine_is_a_config_error():
    with pytest.raises(ConfigError, match="auto, transformers, llamacpp"):
        load.choose_engine("vllm", model="embedded")


def test_engine_option_reaches_every_model_command_and_the_setting(monkeypatch):
    for command in ("analyze", "triage", "watch", "eval"):
        assert "--engine [auto|transformers|llamacpp]" in CliRunner().invoke(main, [command, "--help"]).output
    result = CliRunner().invoke(main, ["triage", "Failed password for root from 10.0.0.1", "--no-store",
                                       "--engine", "llamacpp", "--model", "/no/such/folder"])
    assert result.exit_code == 2 and "runs GGUF models" in result.output
    monkeypatch.setenv("LOGWARDEN_ENGINE", "llamacpp")
    from logwarden.app import config

    config.get_settings.cache_clear()
    try:
        result = CliRunner().invoke(main, ["triage", "Failed password for root", "--no-store",
                                           "--model", "/no/such/folder"])
    finally:
        config.get_settings.cache_clear()
    assert result.exit_code == 2 and "runs GGUF models" in result.output  # the setting chose llama.cpp


def test_the_llamacpp_path_never_imports_torch():
    """RSS and start-up: the CPU default imports neither torch nor transformers."""
    code = ("import sys; import logwarden.cli.main, logwarden.app.pipeline, logwarden.app.triage, "
            "logwarden.engine.load, logwarden.engine.llamacpp, logwarden.engine.gguf_lora; "
            "print(sorted(m for m in ('torch', 'transformers', 'xgrammar', 'peft') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


# ---- sampling and answer chunks -------------------------------------------------------------

def test_sampling_maps_to_llama_cpp_fields():
    from logwarden.engine.llamacpp import sampling_fields

    greedy = sampling_fields(Sampling())
    assert greedy["temperature"] == 0.0 and greedy["repeat_last_n"] == 0 and "seed" not in greedy
    hot = sampling_fields(Sampling(temperature=0.7, top_p=0.9, repetition_penalty=1.1, seed=7))
    assert (hot["temperature"], hot["top_p"], hot["repeat_penalty"], hot["seed"]) == (0.7, 0.9, 1.1, 7)
    assert hot["top_k"] == 0 and hot["min_p"] == 0.0 and hot["repeat_last_n"] == -1  # as transformers does


def test_answer_chunks_become_pieces_finish_and_timings():
    from logwarden.engine.llamacpp import _Outcome

    seen: list[str] = []
    outcome = _Outcome(started=0.0)
    chunks = [{"choices": [{"delta": {"role": "assistant", "content": None}, "finish_reason": None}]},
              {"choices": [{"delta": {"content": '{"a":'}, "finish_reason": None}]},
              {"choices": [{"delta": {"content": "1}"}, "finish_reason": None}]},
              {"choices": [{"delta": {}, "finish_reason": "stop"}], "timings": {"cache_n": 5, "prompt_n": 3}}]
    for chunk in chunks:
        outcome.take(chunk, seen.append)
    assert seen == ['{"a":', "1}"] and outcome.finish == "stop" and outcome.timings["cache_n"] == 5
    assert outcome.error is None and outcome.first_s is not None


@pytest.mark.parametrize("message, grammar", [
    ("Failed to initialize samplers: failed to parse grammar", True),
    ("request (3030 tokens) exceeds the available context size (512 tokens)", False),
])
def test_error_chunks_fail_the_task_and_grammar_errors_are_told_apart(message, grammar):
    from logwarden.engine.llamacpp import _Outcome

    outcome = _Outcome(started=0.0)
    outcome.take({"error": {"code": 400, "message": message}}, None)
    assert outcome.error == f"llama.cpp: {message}" and outcome.grammar_error is grammar


# ---- the assembled GGUF ------------------------------------------------------------------

def test_assembled_gguf_is_verified_and_a_changed_copy_is_rebuilt(tmp_path, capsys):
    pack = PACKS["embedded"]
    path = embedded.ensure_gguf(pack, tmp_path)
    assert path.stat().st_size == pack.size and embedded.sha256_of([path]) == pack.sha256
    with path.open("r+b") as fh:  # bit rot, or a tampered cache
        fh.seek(pack.size // 2)
        byte = fh.read(1)
        fh.seek(pack.size // 2)
        fh.write(bytes([byte[0] ^ 0xFF]))
    assert embedded.ensure_gguf(pack, tmp_path) == path
    assert embedded.sha256_of([path]) == pack.sha256 and "re-assembling" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".{pack.stem}.lock", path.name]
