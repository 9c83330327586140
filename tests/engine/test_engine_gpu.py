"""Throughput work for GPUs (issue 7), tested where it can be on CPU: the batched grammar mask
(same masks, same outputs as per-row filling), forced output lengths for benchmarks, batch size
from free memory, the real Qwen2.5 shapes of bench/gpu.py and its CPU smoke run. Tests marked
`cuda` need a GPU and skip only when `torch.cuda.is_available()` is false."""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import xgrammar as xgr
from _engine_helpers import ANALYST_SYSTEM, SQLI_USER, SSHD_USER, qwen_tokenizer, tiny_model  # noqa: F401
from _repo import REPO

from logwarden.engine.api import Request
from logwarden.engine.constrained import GrammarCache
from logwarden.engine.generate import hold_stops
from logwarden.engine.local import LocalEngine
from logwarden.engine.sizing import HEADROOM, ModelShape, batch_for_memory, cuda_batch, kv_bytes_per_token, row_bytes
from logwarden.schemas import LLMAssessment, assessment_json_schema

ROOT = REPO
USERS = [SSHD_USER, SQLI_USER, "Mar 11 03:00:01 web-01 CRON[3321]: (root) CMD (run-parts /etc/cron.hourly)",
         "one short line"]
REQUESTS = [Request(ANALYST_SYSTEM, u) for u in USERS]
QWEN7B = ModelShape(layers=28, kv_heads=4, head_dim=128, hidden=3584, intermediate=18944, vocab=152_064)

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@functools.cache
def load_bench():
    spec = importlib.util.spec_from_file_location("bench_gpu", ROOT / "bench" / "gpu.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


# ---- batched grammar mask --------------------------------------------------------------------

def test_batch_bitmask_equals_per_row_fill_along_diverging_paths(qwen_tokenizer):
    grammars = GrammarCache(qwen_tokenizer, 151_936, [151_645])
    compiled = grammars.compiled(assessment_json_schema())
    batch = grammars.constraint([assessment_json_schema()] * 3)
    reference = [xgr.GrammarMatcher(compiled) for _ in range(3)]
    single = xgr.allocate_token_bitmask(1, 151_936)
    for step in range(40):
        logits = torch.zeros((3, 151_936))
        batch.mask(logits, [0, 1, 2])
        for row in range(3):
            reference[row].fill_next_token_bitmask(single, 0)
            expected = torch.zeros((1, 151_936))
            xgr.apply_token_bitmask_inplace(expected, single & batch._keep, vocab_size=151_936)
            assert torch.equal(logits[row], expected[0]), (step, row)
        # each row takes a different allowed token, so the three matchers walk different paths
        picks = [int(torch.isfinite(logits[row]).nonzero()[(row * 7 + step) % int(torch.isfinite(logits[row]).sum())])
                 for row in range(3)]
        batch.accept_many([0, 1, 2], picks)
        for row, token in enumerate(picks):
            assert reference[row].accept_token(token)
        if any(m.is_terminated() for m in reference):  # a short answer ended ({"findings": []}): masks compared so far
            break


def test_batch_mask_on_a_subset_of_rows_uses_those_rows_matchers(qwen_tokenizer):
    grammars = GrammarCache(qwen_tokenizer, 151_936, [151_645])
    batch = grammars.constraint([assessment_json_schema()] * 3)
    opening = qwen_tokenizer.convert_tokens_to_ids('{"')
    batch.accept_many([1], [opening])  # row 1 is past the opening brace, rows 0 and 2 are not
    logits = torch.zeros((2, 151_936))
    batch.mask(logits, [2, 1])
    assert torch.isfinite(logits[0, opening]) and not torch.isfinite(logits[1, opening])


def test_a_token_outside_the_grammar_is_reported(qwen_tokenizer):
    from logwarden.errors import ModelError

    batch = GrammarCache(qwen_tokenizer, 151_936, [151_645]).constraint([assessment_json_schema()] * 2)
    with pytest.raises(ModelError, match="outside the grammar"):
        batch.accept_many([0, 1], [qwen_tokenizer.convert_tokens_to_ids('{"'), qwen_tokenizer.convert_tokens_to_ids("hello")])


def test_constrained_batch_equals_single_requests(tiny_model, qwen_tokenizer):
    engine = LocalEngine(tiny_model, qwen_tokenizer, max_batch=8)
    schema = assessment_json_schema()
    batched = engine.generate(REQUESTS, schema=schema, max_new_tokens=40)
    singles = [engine.generate([r], schema=schema, max_new_tokens=40)[0] for r in REQUESTS]
    assert [g.text for g in batched] == [g.text for g in singles]
    assert len({g.text for g in batched}) > 1


# ---- forced lengths (benchmarks) -------------------------------------------------------------

def test_hold_stops_forbids_stop_tokens_only_where_another_token_is_allowed():
    logits = torch.tensor([[0.0, 5.0, 1.0, 9.0], [float("-inf"), float("-inf"), float("-inf"), 2.0]])
    held = hold_stops(logits, frozenset({3}))
    assert held[0].argmax() == 1 and held[0, 3] == float("-inf")
    assert torch.equal(held[1], logits[1])  # only the stop is allowed (grammar closed): it stays


def test_min_new_tokens_forces_every_answer_to_full_length(tiny_model, qwen_tokenizer, monkeypatch):
    from logwarden.engine import generate as loop

    stops = sorted(LocalEngine(tiny_model, qwen_tokenizer).stop_ids)
    original = loop.adjust

    def eager_to_stop(logits, *args):  # a model that wants to end every answer at once
        logits = original(logits, *args).clone()
        logits[:, stops] += 1e4
        return logits

    monkeypatch.setattr(loop, "adjust", eager_to_stop)
    plain = LocalEngine(tiny_model, qwen_tokenizer).generate(REQUESTS, max_new_tokens=20)
    assert all(g.stats.new_tokens == 1 and g.finished for g in plain)
    forced = LocalEngine(tiny_model, qwen_tokenizer, min_new_tokens=20).generate(REQUESTS, max_new_tokens=20)
    assert all(g.stats.new_tokens == 20 and not g.finished for g in forced)


def test_min_new_tokens_with_the_schema_never_breaks_the_grammar(tiny_model, qwen_tokenizer):
    engine = LocalEngine(tiny_model, qwen_tokenizer, min_new_tokens=64)
    for generation in engine.generate(REQUESTS, schema=assessment_json_schema(), max_new_tokens=64):
        assert generation.error is None
        assert generation.stats.new_tokens == 64 or generation.finished
        if generation.finished:
            LLMAssessment.model_validate_json(generation.text)


# ---- batch size from memory ------------------------------------------------------------------

def test_kv_bytes_per_token_of_the_real_7b_shape():
    # 2 (K and V) × 28 layers × 4 KV heads × 128 dims × 2 bytes (bf16) = 56 KiB per token
    assert kv_bytes_per_token(QWEN7B) == 57_344
    assert kv_bytes_per_token(QWEN7B, dtype_bytes=4) == 2 * 57_344


def test_batch_for_memory_scales_with_free_memory_and_is_clamped():
    per_row = row_bytes(QWEN7B, 450, 200)
    assert per_row > kv_bytes_per_token(QWEN7B) * 650  # KV plus logits and prefill activations
    free = int(100 * per_row / (1 - HEADROOM)) + 1
    assert batch_for_memory(free, QWEN7B, prompt_tokens=450, new_tokens=200) == 100
    assert batch_for_memory(free // 2 - per_row, QWEN7B, prompt_tokens=450, new_tokens=200) == 49
    assert batch_for_memory(free, QWEN7B, prompt_tokens=450, new_tokens=200, cap=64) == 64
    assert batch_for_memory(0, QWEN7B, prompt_tokens=450, new_tokens=200) == 1


def test_model_shape_reads_a_transformers_config():
    from transformers import Qwen2Config

    shape = ModelShape.of(Qwen2Config(**load_bench().QWEN25["7b"]))
    assert shape == QWEN7B


def test_cuda_batch_falls_back_off_cuda_and_reads_free_memory_on_cuda(tiny_model, monkeypatch):
    assert cuda_batch(tiny_model, prompt_tokens=400, new_tokens=128, fallback=8) == 8
    fake = SimpleNamespace(device=torch.device("cuda", 0), config=tiny_model.config, dtype=torch.bfloat16)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (40 * 2**30, 141 * 2**30))
    expected = batch_for_memory(40 * 2**30, ModelShape.of(tiny_model.config), prompt_tokens=400, new_tokens=128,
                                cap=10**6)
    assert cuda_batch(fake, prompt_tokens=400, new_tokens=128, cap=10**6) == expected > 8


# ---- bench/gpu.py ----------------------------------------------------------------------------

@pytest.mark.parametrize("size, billions", [("0.5b", 0.49), ("1.5b", 1.54), ("7b", 7.62)])
def test_bench_configs_have_the_real_qwen25_parameter_counts(size, billions):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    with torch.device("meta"):
        model = Qwen2ForCausalLM(Qwen2Config(**load_bench().QWEN25[size]))
    assert sum(p.numel() for p in model.parameters()) / 1e9 == pytest.approx(billions, abs=0.01)


def test_bench_prompts_have_the_requested_token_lengths(qwen_tokenizer):
    requests = load_bench().make_requests(qwen_tokenizer, 6, system_tokens=250, window_tokens=150)
    assert len({r.system for r in requests}) == 1 and len({r.user for r in requests}) == 6
    for request in requests:
        assert abs(len(qwen_tokenizer(request.system)["input_ids"]) - 250) <= 2
        assert abs(len(qwen_tokenizer(request.user)["input_ids"]) - 150) <= 2


def test_bench_smoke_run_on_cpu_writes_json_and_markdown(tmp_path):
    bench = load_bench()
    bench.main(["--sizes", "tiny", "--quants", "fp32", "--requests", "3", "--baseline-requests", "2",
                "--baseline-batch", "2", "--new-tokens", "5", "--device", "cpu", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "gpu.json").read_text())
    result = data["results"][0]
    assert "error" not in result, result
    assert result["engine"]["batch_new_tokens"] == 3 * 5 and result["baseline"]["batch_new_tokens"] == 2 * 5
    for arm in ("engine", "baseline"):
        assert result[arm]["decode_b1_tok_s"] > 0 and result[arm]["batch_records_s"] > 0
    markdown = (tmp_path / "gpu.md").read_text()
    assert "| tiny | fp32 |" in markdown and "decode tok/s, batch 1" in markdown


# ---- on a GPU --------------------------------------------------------------------------------

@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("decoder", ["graphs", "compile"])
def test_cuda_static_decoders_equal_dynamic_eager(qwen_tokenizer, decoder):
    from _engine_helpers import build_tiny_qwen

    model = build_tiny_qwen().to("cuda")
    schema = assessment_json_schema()
    eager = LocalEngine(model, qwen_tokenizer).generate(REQUESTS, schema=schema, max_new_tokens=48)
    fast = LocalEngine(model, qwen_tokenizer, cache_kind="static", decoder=decoder)
    first = fast.generate(REQUESTS, schema=schema, max_new_tokens=48)  # compile / capture
    again = fast.generate(REQUESTS, schema=schema, max_new_tokens=48)  # replays on the reset cache
    assert [g.text for g in first] == [g.text for g in again] == [g.text for g in eager]


@pytest.mark.cuda
@needs_cuda
def test_cuda_batch_from_real_free_memory():
    from _engine_helpers import build_tiny_qwen

    model = build_tiny_qwen().to("cuda")
    free, _ = torch.cuda.mem_get_info()
    assert cuda_batch(model, prompt_tokens=400, new_tokens=128, cap=10**6) == batch_for_memory(
        free, ModelShape.of(model.config), prompt_tokens=400, new_tokens=128, dtype_bytes=4, cap=10**6)


# ---- analyze's throughput mode ---------------------------------------------------------------

def test_throughput_options_size_the_batch_from_free_cuda_memory(tiny_model, qwen_tokenizer, monkeypatch):
    from logwarden.app.pipeline import throughput_options
    from logwarden.app.run_options import RunOptions
    from logwarden.prompts import system_prompt

    engine = LocalEngine(tiny_model, qwen_tokenizer, max_batch=8)
    # the engine as it would be on a GPU: its model's device and dtype are all that sizing reads
    engine.model = SimpleNamespace(device=torch.device("cuda", 0), config=tiny_model.config, dtype=torch.bfloat16)
    engine.device = "cuda"
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (2 * 2**30, 141 * 2**30))
    options = RunOptions(max_new_tokens=320, prompt_token_budget=700)
    tuned = throughput_options(options, engine)
    expected = batch_for_memory(2 * 2**30, ModelShape.of(tiny_model.config),
                                prompt_tokens=engine.count_tokens(system_prompt()) + 700, new_tokens=320)
    assert tuned.max_batch == engine.max_batch == expected > options.max_batch
    assert tuned.max_new_tokens == 320 and options.max_batch == 8  # a copy; the caller's options stay


def test_throughput_options_leave_cpu_and_rules_only_runs_alone(tiny_model, qwen_tokenizer):
    from logwarden.app.pipeline import throughput_options
    from logwarden.app.run_options import RunOptions

    engine = LocalEngine(tiny_model, qwen_tokenizer, max_batch=8)
    assert throughput_options(RunOptions(), engine).max_batch == 8 and engine.max_batch == 8
    assert throughput_options(RunOptions(rules_only=True), None) == RunOptions(rules_only=True)
