"""The llama.cpp engine on the real embedded GGUF as shipped (`--quant q4_k_m`: + the shipped adapter
converted to a GGUF LoRA). The derived Q4_0 default is tests/test_engine_derived_gguf.py's.

Marked `model`: a few seconds to load, answers take 10-60 s each on 2 shared cores. Asserted:
schema-valid finished answers (the call's schema and a request's own), streaming that yields
pieces before the end, the shared prefix reused and reported, the adapter changing the answer,
token counts equal to llama.cpp's own, clear errors for a bad GGUF, and a process that survives
malformed requests and abandoned streams.
"""

from __future__ import annotations

import time

import pytest
from _engine_helpers import SQLI_USER, SSHD_USER
from _repo import REPO

from logwarden.app.backends import SECURITY_V2
from logwarden.app.config import get_settings
from logwarden.engine.api import Request
from logwarden.engine.embedded import PACKS
from logwarden.engine.load import load_engine, resolve_gguf
from logwarden.errors import ModelError
from logwarden.prompts import system_prompt
from logwarden.schemas import LLMAssessment, assessment_json_schema

pytestmark = pytest.mark.model
CATEGORY_ONLY = {"type": "object", "additionalProperties": False, "required": ["category", "code"],
                 "properties": {"category": {"enum": ["brute_force", "reconnaissance"]},
                                "code": {"type": "string", "pattern": r"^T\d{4}(\.\d{3})?$"}}}


def _engine(**kw):
    kw.setdefault("adapter", str(SECURITY_V2))  # the engine's LoRA path is under test, not which adapter is default
    return load_engine(engine="llamacpp", model="embedded", quant="q4_k_m", threads=2,
                       cache_dir=get_settings().model_cache, **kw)


@pytest.fixture(scope="module")
def engine():
    llama = _engine(max_batch=2)
    yield llama
    llama.close()


def test_describes_the_verified_gguf_and_the_converted_adapter(engine):
    info = engine.describe()
    assert info["engine"] == "llamacpp" and info["sha256"] == PACKS["embedded"].sha256
    assert info["quant"] == "Q4_K_M" and info["slots"] == 2 and info["threads"] == 2
    assert info["adapter"].endswith("security-v2") and info["adapter_gguf"].endswith("-qwen2.gguf")
    assert info["tokenizer_exact"] is True


def test_batch_answers_are_schema_valid_and_reuse_the_prefix(engine):
    system = system_prompt()
    requests = [Request(system, SSHD_USER), Request(system, SQLI_USER)]
    first, second = engine.generate(requests, schema=assessment_json_schema(), max_new_tokens=320)
    for generation in (first, second):
        assert generation.finished and generation.error is None, generation.text
        assessment = LLMAssessment.model_validate_json(generation.text)
        assert all(f.anomaly and f.evidence for f in assessment.findings)  # the recommendation is optional
        assert generation.stats.new_tokens > 5 and generation.stats.prompt_tokens > engine.count_tokens(system)
    again = engine.generate([Request(system, SSHD_USER + "\n(again)")], schema=assessment_json_schema(),
                            max_new_tokens=320)[0]
    assert again.stats.cached_prefix_tokens >= engine.count_tokens(system)  # the system prefix was not recomputed


def test_token_counts_are_llama_cpps_own(engine):
    system, user = "Rate this line.", "Mar  2 09:00:01 bastion sshd[700]: Failed password — 用户 \"root\"\t1234567"
    rendered = (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
                f"<|im_start|>assistant\n")  # Qwen2.5's chat template
    generation = engine.generate([Request(system, user)], max_new_tokens=1)[0]
    assert generation.stats.prompt_tokens == engine.count_tokens(rendered)


def test_a_requests_own_schema_wins_and_patterns_with_escapes_hold(engine):
    import json

    request = Request(system_prompt(), SSHD_USER, schema=CATEGORY_ONLY)
    generation = engine.generate([request], schema=assessment_json_schema(), max_new_tokens=64)[0]
    assert generation.finished, generation.text
    answer = json.loads(generation.text)
    assert set(answer) == {"category", "code"} and answer["category"] in ("brute_force", "reconnaissance")
    assert answer["code"][0] == "T" and answer["code"][1:5].isdigit()


def test_stream_yields_pieces_before_the_end(engine):
    stream = engine.stream(Request(system_prompt(), SQLI_USER), schema=assessment_json_schema(), max_new_tokens=320)
    seen_before_end = 0
    for piece in stream:
        assert stream.generation is None  # still running while pieces arrive
        seen_before_end += bool(piece)
    assert seen_before_end > 10 and stream.generation is not None and stream.generation.finished
    LLMAssessment.model_validate_json(stream.generation.text)
    assert stream.generation.stats.cached_prefix_tokens >= engine.count_tokens(system_prompt())


def test_an_abandoned_stream_is_cancelled_and_the_engine_goes_on(engine):
    # a long free answer (a findings answer may be 15 tokens: too short to tell stopped from finished)
    request = Request("You are a helpful assistant.", "Explain log rotation on Linux in 200 words.")
    whole = engine.generate([request], max_new_tokens=160)[0]
    stream = engine.stream(request, max_new_tokens=160)
    began = time.perf_counter()
    pieces = iter(stream)
    next(pieces), next(pieces)
    pieces.close()  # the reader went away (a closed UI page, Ctrl-C): returns once llama.cpp stopped
    abandoned_s = time.perf_counter() - began
    after = engine.generate([Request("Answer with one word.", "Say ok.")], max_new_tokens=4)[0]
    assert stream.generation is None and after.error is None and after.stats.new_tokens >= 1
    assert whole.stats.new_tokens > 40 and abandoned_s < whole.stats.total_s / 2  # stopped, not run to the end


def test_malformed_requests_fail_alone_without_taking_the_process_down(engine):
    huge = Request(system_prompt(), "word " * 5000)  # more than a slot's context
    broken = Request(system_prompt(), "bad surrogate \udc80 in a log line")
    normal = Request("Answer with one word.", "Say ok.")
    results = engine.generate([huge, broken, normal], max_new_tokens=4)
    assert results[0].error and "context" in results[0].error and not results[0].finished
    assert results[1].error and not results[1].finished
    assert results[2].error is None and results[2].stats.new_tokens >= 1


def test_a_schema_llama_cpp_cannot_compile_is_a_model_error(engine):
    with pytest.raises(ModelError, match="schema"):
        engine.generate([Request("s", "u")], schema={"type": "object", "properties": {"x": {"type": "bogus"}}},
                        max_new_tokens=4)
    assert engine.generate([Request("Answer with one word.", "Say ok.")], max_new_tokens=2)[0].error is None


def test_the_adapter_changes_the_answer(engine):
    """The first findings already differ with and without the LoRA; whole answers' validity is the
    batch test's (the plain model's long answers can outrun a short budget: not this test's point)."""
    plain = _engine(adapter=None, max_batch=1)
    try:
        request = Request(system_prompt(), SSHD_USER)
        tuned = engine.generate([request], schema=assessment_json_schema(), max_new_tokens=96)[0]
        untuned = plain.generate([request], schema=assessment_json_schema(), max_new_tokens=96)[0]
    finally:
        plain.close()
    assert plain.describe()["adapter"] is None
    for generation in (tuned, untuned):
        assert generation.error is None and '"findings": [{' in generation.text, generation.text
    assert tuned.text != untuned.text


@pytest.mark.parametrize("damage", ["missing", "truncated", "lora-for-another-model"])
def test_a_bad_gguf_is_a_clear_model_error(tmp_path, damage):
    real = resolve_gguf("embedded", cache_dir=get_settings().model_cache)
    path = tmp_path / "model.gguf"
    kw = {"adapter": None}
    if damage == "truncated":  # the header and vocabulary are there, the tensors are not
        path.write_bytes((real.path / real.gguf_file).read_bytes()[: 64 << 20])
    elif damage == "lora-for-another-model":
        path.symlink_to(real.path / real.gguf_file)
        adapter = tmp_path / "adapter"
        adapter.mkdir()
        _write_misfit_adapter(adapter)
        kw = {"adapter": str(adapter)}
    with pytest.raises(ModelError) as err:
        load_engine(engine="llamacpp", model=str(path), threads=1, cache_dir=tmp_path / "cache", **kw)
    message = str(err.value)
    assert str(path) in message or "adapter" in message.lower()
    assert {"missing": "does not exist", "truncated": "llama.cpp could not load",
            "lora-for-another-model": "llama.cpp could not load"}[damage] in message


def _write_misfit_adapter(folder) -> None:
    """A well-formed peft LoRA whose q_proj has the wrong width for the 0.5B (a 1.5B's 1536)."""
    import json

    import numpy as np
    from test_engine_llamacpp import _write_safetensors

    tensors = {"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": np.zeros((4, 1536), np.float32),
               "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight": np.zeros((1536, 4), np.float32)}
    _write_safetensors(folder / "adapter_model.safetensors", tensors, "F32")
    (folder / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 4, "lora_alpha": 8}))


def _sample_logs_prompts(n: int, count_tokens) -> list[Request]:
    """The pipeline's own prompts for sample_logs' labelled files (recorded, no model), the n shortest."""
    from pathlib import Path

    from logwarden.app.evaluate import labelled_files, load_labels, run_eval
    from logwarden.train.replay import RecordingEngine

    labels = REPO / "sample_logs" / "labels.jsonl"
    units = load_labels(labels)
    recorder = RecordingEngine(count_tokens)
    run_eval(units, labels.parent, labelled_files(units, labels.parent), engine=recorder, llm_policy="suspicious",
             incidents=None)  # window prompts only: no incident stories
    requests = sorted(recorder.requests.values(), key=lambda r: count_tokens(r.user))
    return requests[:: max(1, len(requests) // n)][:n]


def test_converted_adapter_agrees_with_transformers_and_peft(engine):
    """Same verdicts (each finding's category and risk level), greedy, schema on: llama.cpp Q4_K_M kernels + the
    GGUF LoRA vs transformers on the same weights dequantized to fp32 + the peft adapter. (Both grammars must
    spell the JSON the same way: a compact ":[" had security-v2 answer "no findings" everywhere here.)
    The prompts carry the system prompt the adapter was trained on, and 2 of 3 must agree: llama.cpp rounds
    activations to 8 bits in its dot products, so a borderline prompt may flip on another CPU (CI saw one),
    while a wrong conversion (scale, transpose, a missing tensor) changes them all."""
    import dataclasses
    import json

    from logwarden.app.backends import trained_prompt_version

    trained_on = system_prompt(trained_prompt_version(SECURITY_V2))
    requests = [dataclasses.replace(r, system=trained_on) for r in _sample_logs_prompts(3, engine.count_tokens)]
    schema = assessment_json_schema()
    ours = engine.generate(requests, schema=schema, max_new_tokens=320)
    reference = load_engine(engine="transformers", model="embedded", adapter=str(SECURITY_V2),
                            threads=2, max_batch=3,
                            cache_dir=get_settings().model_cache)
    theirs = reference.generate(requests, schema=schema, max_new_tokens=320)

    def verdict(g):
        return [(f["category"], f["risk_level"]) for f in json.loads(g.text)["findings"]]

    assert all(g.finished for g in ours + theirs)
    agree = [verdict(a) == verdict(b) for a, b in zip(ours, theirs, strict=True)]
    assert sum(agree) >= 2, [(verdict(a), verdict(b)) for a, b in zip(ours, theirs, strict=True)]
