"""The derived Q4_0 GGUF (adapter merged) and the prefix KV state on disk, on a tiny random Qwen2
GGUF with the real vocabulary (tests/_gguf_helpers.py): deterministic bytes, the merge equal to
peft's update within Q4_0's (Q8_0's) rounding, a cache that re-derives a damaged file, a model llama.cpp
loads and answers schema-valid JSON with; a prefix state that a fresh engine restores (the same
greedy answer as a cold prefill, its tokens reused by the first request), and stale, corrupt or
mismatched states ignored and rewritten. Plus the `--quant` choices. The real 0.5B is used only
by the tests marked `model`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _gguf_helpers import LAYERS, LINEAR, read_tensors, write_tiny_adapter, write_tiny_qwen2

from logwarden.engine import gguf_derive, load
from logwarden.engine.api import Request
from logwarden.engine.embedded import sha256_of
from logwarden.engine.gguf_lora import read_safetensors
from logwarden.engine.gguf_meta import read_metadata
from logwarden.errors import ConfigError

Q4_0, Q8_0 = 2, 8
SYSTEM = "You are a security log analyst. Answer with JSON only. " * 12
LEAD = "Untrusted log digest between the markers:\n"
CATEGORY = {"type": "object", "additionalProperties": False, "required": ["category", "risk"],
            "properties": {"category": {"enum": ["benign", "brute_force", "web_attack"]},
                           "risk": {"enum": ["info", "low", "medium", "high"]}}}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return write_tiny_qwen2(tmp_path_factory.mktemp("tiny") / "tiny.gguf")


@pytest.fixture(scope="module")
def adapter(tmp_path_factory) -> Path:
    return write_tiny_adapter(tmp_path_factory.mktemp("adapter") / "tiny-adapter",
                              config={"alpha_pattern": {"down_proj": 16.0}})


@pytest.fixture(scope="module")
def derived(tiny, adapter, tmp_path_factory) -> gguf_derive.Derived:
    return gguf_derive.ensure_derived(tiny, base_sha256=sha256_of([tiny]), adapter=adapter,
                                      cache_dir=tmp_path_factory.mktemp("cache"))


# ---- the derived file -----------------------------------------------------------------------

def test_deriving_twice_writes_the_same_bytes(tiny, adapter, derived, tmp_path):
    again = gguf_derive.ensure_derived(tiny, base_sha256=sha256_of([tiny]), adapter=adapter, cache_dir=tmp_path)
    assert again.sha256 == derived.sha256 == sha256_of([derived.path])
    assert again.path != derived.path and again.path.name == derived.path.name  # named by inputs, not by place


def test_feed_forward_becomes_q4_0_attention_q8_0_and_the_rest_is_copied(tiny, derived):
    base, ours = read_tensors(tiny), read_tensors(derived.path)
    assert list(ours) == list(base)
    for name, (values, ggml_type) in base.items():
        if name.startswith("blk.") and values.ndim == 2:
            assert ours[name][1] == (Q8_0 if ".attn_" in name else Q4_0), name
        else:  # embeddings, output, norms, biases: the base's own bytes
            assert ours[name][1] == ggml_type
            np.testing.assert_array_equal(ours[name][0], values)
    meta = read_metadata(derived.path)
    assert meta["general.file_type"] == 2  # MOSTLY_Q4_0
    assert meta["tokenizer.chat_template"] == read_metadata(tiny)["tokenizer.chat_template"]
    assert meta["logwarden.derived.adapter"] == "tiny-adapter" and meta["logwarden.derived.recipe"] == gguf_derive.RECIPE


def test_merged_weights_are_the_base_plus_peft_update_within_the_rounding(tiny, adapter, derived):
    config = json.loads((adapter / "adapter_config.json").read_text())
    lora = read_safetensors(adapter / "adapter_model.safetensors")
    base_tensors, merged_tensors = read_tensors(tiny), read_tensors(derived.path)
    for layer in range(LAYERS):
        for module, (name, _) in LINEAR.items():
            prefix = f"base_model.model.model.layers.{layer}.{module}"
            a, b = lora[f"{prefix}.lora_A.weight"], lora[f"{prefix}.lora_B.weight"]
            alpha = config["alpha_pattern"].get(module.split(".")[-1], config["lora_alpha"])
            base = base_tensors[f"blk.{layer}.{name}.weight"][0]
            want = base + alpha / a.shape[0] * (b @ a)  # peft: W + alpha / r · B A, (out, in) rows
            merged, ggml_type = merged_tensors[f"blk.{layer}.{name}.weight"]
            # Q4_0 rounds each block of 32 to multiples of d = amax / 8 (Q8_0: amax / 127): no value
            # moves further
            steps = 8 if ggml_type == Q4_0 else 127
            bound = np.repeat(np.abs(want.reshape(-1, 32)).max(axis=1) / steps, 32).reshape(want.shape)
            assert np.all(np.abs(merged - want) <= bound * 1.001 + 1e-6), (layer, name)
            assert np.abs(base - want).max() > 3 * bound.max()  # an unmerged weight would fail the check


def test_the_cache_rederives_a_damaged_file_and_keys_on_the_adapter(tiny, adapter, tmp_path):
    sha = sha256_of([tiny])
    first = gguf_derive.ensure_derived(tiny, base_sha256=sha, adapter=adapter, cache_dir=tmp_path)
    with first.path.open("r+b") as fh:  # one flipped byte in the weights
        fh.seek(first.path.stat().st_size - 100)
        byte = fh.read(1)
        fh.seek(-1, 1)
        fh.write(bytes([byte[0] ^ 0xFF]))
    assert gguf_derive.find_derived(base_sha256=sha, adapter=adapter, cache_dir=tmp_path) is None
    again = gguf_derive.ensure_derived(tiny, base_sha256=sha, adapter=adapter, cache_dir=tmp_path)
    assert again.sha256 == first.sha256 == sha256_of([again.path])
    plain = gguf_derive.ensure_derived(tiny, base_sha256=sha, adapter=None, cache_dir=tmp_path)
    assert plain.path != first.path and plain.sha256 != first.sha256 and plain.adapter_sha256 is None
    assert not [p for p in (tmp_path / "derived").iterdir() if p.name.endswith(".part")]


def _engine(gguf: Path, states: Path | None = None, *, slots: int = 2, **kw):
    from logwarden.engine.llamacpp import LlamaCppConfig, LlamaCppEngine

    config = LlamaCppConfig(gguf=gguf, threads=2, slots=slots, ctx_per_slot=1024, prefix_state_dir=states)
    return LlamaCppEngine(config, model_name="tiny", **kw)


def test_the_derived_model_loads_and_answers_schema_valid_json(derived):
    engine = _engine(derived.path, sha256=derived.sha256, adapter_name="tiny-adapter", adapter_merged=True)
    try:
        answers = engine.generate([Request(SYSTEM, "Failed password for root"), Request(SYSTEM, "GET /etc/passwd")],
                                  schema=CATEGORY, max_new_tokens=64)
        info = engine.describe()
    finally:
        engine.close()
    for generation in answers:
        assert generation.finished and generation.error is None, generation.text
        assert set(json.loads(generation.text)) == {"category", "risk"}
    assert info["quant"] == "Q4_0" and info["adapter"] == "tiny-adapter" and info["adapter_merged"] is True
    assert info["adapter_gguf"] is None and info["sha256"] == derived.sha256


# ---- the prefix state on disk ---------------------------------------------------------------

def _greedy(engine, user: str = "Failed password for root from 203.0.113.5"):
    return engine.generate([Request(SYSTEM, LEAD + user)], max_new_tokens=24)[0]


@pytest.fixture(scope="module")
def cold_answer(derived, tmp_path_factory) -> str:
    """The prefix prefilled in this process (no state on disk yet): what a restore must reproduce.
    (A prefix prefilled apart from the rest of the prompt sums its floats in other chunks than one
    whole prefill; on this random model's near-ties a greedy answer may then part ways after a few
    tokens, so the reference is the prefilled prefix, not the whole-prompt prefill.)"""
    warmth, answer = _warm_and_answer(derived.path, tmp_path_factory.mktemp("reference-states"))
    assert warmth["state"] == "prefilled" and answer.stats.new_tokens > 5
    return answer.text


def _warm_and_answer(gguf: Path, states: Path):
    engine = _engine(gguf, states)
    try:
        return engine.warm_prefix(SYSTEM, LEAD), _greedy(engine)
    finally:
        engine.close()


def test_a_fresh_engine_restores_the_prefix_and_answers_as_a_cold_prefill(derived, cold_answer, tmp_path):
    first, made = _warm_and_answer(derived.path, tmp_path)
    second, restored = _warm_and_answer(derived.path, tmp_path)
    assert first["state"] == "prefilled" and second["state"] == "restored"
    assert first["tokens"] == second["tokens"] > 0
    assert restored.stats.cached_prefix_tokens > 0  # the first request of a fresh engine
    assert restored.stats.prompt_tokens - restored.stats.cached_prefix_tokens < restored.stats.prompt_tokens / 3
    assert made.text == restored.text == cold_answer


def _state_files(folder: Path) -> tuple[Path, Path]:
    (state,) = folder.glob("prefix-*.bin")
    return state, state.with_name(state.name + ".json")


def test_a_corrupt_state_is_ignored_and_rewritten(derived, cold_answer, tmp_path):
    _warm_and_answer(derived.path, tmp_path)
    state, _ = _state_files(tmp_path)
    good = state.read_bytes()
    state.write_bytes(good[:1000] + bytes(b ^ 0x5A for b in good[1000:2000]) + good[2000:])  # KV bytes damaged
    warmth, answer = _warm_and_answer(derived.path, tmp_path)
    assert warmth["state"] == "prefilled" and answer.text == cold_answer
    assert state.read_bytes() == good  # rewritten: the same prefix, the same KV
    assert _warm_and_answer(derived.path, tmp_path)[0]["state"] == "restored"


def test_a_state_that_llama_cpp_refuses_is_discarded(derived, cold_answer, tmp_path):
    """A manifest that vouches for a truncated file (as if both were replaced): llama.cpp's own check."""
    _warm_and_answer(derived.path, tmp_path)
    state, manifest = _state_files(tmp_path)
    state.write_bytes(state.read_bytes()[:4096])
    recorded = json.loads(manifest.read_text())
    manifest.write_text(json.dumps(recorded | {"sha256": sha256_of([state])}))
    warmth, answer = _warm_and_answer(derived.path, tmp_path)
    assert warmth["state"] == "prefilled" and answer.text == cold_answer


def test_another_models_state_is_never_restored(tiny, derived, cold_answer, tmp_path):
    """Same shapes, other weights: llama.cpp would load it; the key (model sha256) keeps it out."""
    other, _ = _warm_and_answer(tiny, tmp_path / "other")
    theirs, their_manifest = _state_files(tmp_path / "other")
    _warm_and_answer(derived.path, tmp_path)
    ours, our_manifest = _state_files(tmp_path)
    ours.write_bytes(theirs.read_bytes())  # a stale state under our name…
    our_manifest.write_text(their_manifest.read_text())  # …with its own, consistent manifest
    warmth, answer = _warm_and_answer(derived.path, tmp_path)
    assert other["state"] == "prefilled" and warmth["state"] == "prefilled" and answer.text == cold_answer


def _warm(gguf: Path, states: Path, system: str = SYSTEM, slots: int = 2) -> str:
    engine = _engine(gguf, states, slots=slots)
    try:
        return engine.warm_prefix(system, LEAD)["state"]
    finally:
        engine.close()


def test_a_changed_prefix_or_slot_count_gets_its_own_state(derived, tmp_path):
    """llama.cpp refuses a state saved with another number of slots: one file per count, no thrashing."""
    assert _warm(derived.path, tmp_path) == "prefilled"
    assert _warm(derived.path, tmp_path, system=SYSTEM + " Be brief.") == "prefilled"
    assert _warm(derived.path, tmp_path, slots=1) == "prefilled"
    assert _warm(derived.path, tmp_path) == _warm(derived.path, tmp_path, slots=1) == "restored"
    assert len(list(tmp_path.glob("prefix-*.bin"))) == 3


# ---- choosing the weights ---------------------------------------------------------------------

@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(load, "_cuda_usable", lambda: False)


@pytest.mark.parametrize("model, quant, want", [
    ("embedded", "auto", "q4_0"), ("embedded", "q4_k_m", "q4_k_m"), ("embedded-1.5b", "auto", "q4_k_m"),
    ("/m/x.gguf", "auto", "q4_k_m"), ("/m/x.gguf", "q4_0", "q4_0"),
])
def test_auto_derives_q4_0_for_the_embedded_model_only(model, quant, want):
    assert load.llamacpp_weights(model, quant) == want


def test_a_llama_cpp_quant_picks_llama_cpp_and_transformers_refuses_it(no_cuda, monkeypatch):
    monkeypatch.setattr(load, "_cuda_usable", lambda: True)  # even where auto would pick transformers
    assert load.choose_engine("auto", model="embedded", quant="q4_0") == "llamacpp"
    with pytest.raises(ConfigError, match="chooses the GGUF weights llama.cpp runs"):
        load.choose_engine("transformers", model="embedded", quant="q4_k_m")
    with pytest.raises(ConfigError, match="runs GGUF models"):
        load.choose_engine("auto", model="/models/qwen-folder", quant="q4_0")


def test_the_quant_setting_reaches_the_engine_options(monkeypatch):
    from logwarden.app import config
    from logwarden.cli.common import make_engine_options

    monkeypatch.setenv("LOGWARDEN_QUANT", "q4_k_m")
    config.get_settings.cache_clear()
    try:
        kw = {"backend": "local", "engine": None, "model": None, "adapter": None, "threads": None, "base_urls": (),
              "api_key_env": None, "concurrency": 8, "max_rps": None}
        assert make_engine_options({**kw, "quant": None}).quant == "q4_k_m"
        assert make_engine_options({**kw, "quant": "q4_0"}).quant == "q4_0"  # the flag wins
    finally:
        config.get_settings.cache_clear()


# ---- the real embedded model ------------------------------------------------------------------

@pytest.mark.model
def test_the_embedded_default_is_the_merged_q4_0_and_restores_its_prefix():
    """The shipped adapter merged into the derived file; a second engine (as a second process would)
    restores the real system prefix from the model cache and its first request reuses it."""
    from logwarden.app.backends import SECURITY_V2
    from logwarden.app.config import get_settings
    from logwarden.engine.gguf_lora import adapter_sha256
    from logwarden.prompts import USER_LEAD, system_prompt

    cache = get_settings().model_cache
    first = load.load_engine(engine="llamacpp", model="embedded", adapter=str(SECURITY_V2), threads=2,
                             max_batch=1, cache_dir=cache)
    info = first.describe()
    assert info["quant"] == "Q4_0" and info["adapter"].endswith("security-v2") and info["adapter_merged"]
    assert info["adapter_gguf"] is None
    derived_manifest = json.loads(Path(info["path"]).with_suffix(".json").read_text())
    assert derived_manifest["sha256"] == info["sha256"] == sha256_of([Path(info["path"])])
    assert derived_manifest["adapter_sha256"] == adapter_sha256(Path(info["adapter"]))
    first.warm_prefix(system_prompt(), USER_LEAD)
    first.close()
    second = load.load_engine(engine="llamacpp", model="embedded", adapter=str(SECURITY_V2), threads=2,
                             max_batch=1, cache_dir=cache)
    try:
        assert second.warm_prefix(system_prompt(), USER_LEAD)["state"] == "restored"
        user = USER_LEAD + "source: pasted lines (syslog)\nlines:\n L1: sshd[1]: Failed password for root\nLOG_DIGEST>>>\nJSON:"
        answer = second.generate([Request(system_prompt(), user)], max_new_tokens=8)[0]
    finally:
        second.close()
    assert answer.stats.cached_prefix_tokens >= second.count_tokens(system_prompt())
