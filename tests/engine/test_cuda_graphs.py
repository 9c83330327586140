"""The captured-graph decoder's CPU half (engine/cuda_graphs.py): the 4-D decode mask gives the
same answers as transformers' own masks, pooled caches are reset and reused, and the engine
refuses decoder settings that cannot work. Capture itself needs CUDA: test_engine_gpu.py."""

from __future__ import annotations

import pytest
import torch
from _engine_helpers import ANALYST_SYSTEM, SQLI_USER, SSHD_USER, build_tiny_qwen, qwen_tokenizer  # noqa: F401

from logwarden.engine.api import Request
from logwarden.engine.cuda_graphs import GraphDecoder, decode_mask
from logwarden.engine.local import LocalEngine
from logwarden.errors import ConfigError
from logwarden.schemas import assessment_json_schema

REQUESTS = [Request(ANALYST_SYSTEM, SSHD_USER), Request(ANALYST_SYSTEM, SQLI_USER),
            Request(ANALYST_SYSTEM, SSHD_USER + "\nMar 11 02:14:07 web-01 sshd[4242]: Invalid user pi")]


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_static_cache_with_the_graph_decoder_answers_like_the_dynamic_cache(qwen_tokenizer, attention):
    model = build_tiny_qwen()
    model.config._attn_implementation = attention
    schema = assessment_json_schema()
    reference = LocalEngine(model, qwen_tokenizer).generate(REQUESTS, schema=schema, max_new_tokens=40)
    engine = LocalEngine(model, qwen_tokenizer, cache_kind="static", decoder="graphs")
    first = engine.generate(REQUESTS, schema=schema, max_new_tokens=40)
    again = engine.generate(REQUESTS, schema=schema, max_new_tokens=40)  # the pooled cache, reset
    assert [g.text for g in first] == [g.text for g in again] == [g.text for g in reference]
    assert engine.describe()["decoder"] == "graphs"


def test_decode_mask_is_boolean_for_sdpa_and_additive_for_eager():
    mask = torch.tensor([[0, 1, 1, 0], [1, 1, 1, 1]])
    sdpa = decode_mask(mask, "sdpa", torch.float32)
    assert sdpa.shape == (2, 1, 1, 4) and sdpa.dtype == torch.bool and sdpa[0, 0, 0].tolist() == [False, True, True, False]
    eager = decode_mask(mask, "eager", torch.bfloat16)
    assert eager.dtype == torch.bfloat16 and eager[0, 0, 0, 1] == 0 and eager[0, 0, 0, 0] == torch.finfo(torch.bfloat16).min


def test_caches_are_pooled_per_shape_reset_and_the_oldest_evicted():
    decoder = GraphDecoder(build_tiny_qwen(), pool_size=2)
    a = decoder.cache(2, 256)
    keys = torch.zeros(2, 2, 3, 16)
    a.update(keys + 1, keys + 1, 0)
    assert int(a.get_seq_length()) == 3
    assert decoder.cache(2, 256) is a and int(a.get_seq_length()) == 0  # same object, emptied
    assert decoder.cache(1, 256) is not a
    decoder.cache(4, 512)  # a third shape: the least recently used (2, 256) goes
    assert decoder.cache(2, 256) is not a


def test_a_cuda_oom_empties_the_cache_pool_before_the_batch_is_halved(qwen_tokenizer, monkeypatch):
    engine = LocalEngine(build_tiny_qwen(), qwen_tokenizer, cache_kind="static", decoder="graphs", max_batch=8)
    expected = [g.text for g in engine.generate(REQUESTS, max_new_tokens=8)]
    assert engine._graphs._caches  # the full batch's cache stays pooled
    real_run, pooled = engine._run_chunk, []

    def run_or_oom(chunk, *args):
        if len(chunk) > 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        pooled.append(len(engine._graphs._caches))
        return real_run(chunk, *args)

    monkeypatch.setattr(engine, "_run_chunk", run_or_oom)
    assert [g.text for g in engine.generate(REQUESTS, max_new_tokens=8)] == expected
    assert pooled[0] == 0  # the first retry started from an empty pool


def test_the_engine_refuses_decoders_that_cannot_work(qwen_tokenizer):
    model = build_tiny_qwen()
    with pytest.raises(ConfigError, match="static cache"):
        LocalEngine(model, qwen_tokenizer, decoder="graphs")
    with pytest.raises(ConfigError, match="Unknown decoder"):
        LocalEngine(model, qwen_tokenizer, cache_kind="static", decoder="turbo")
    model.config._attn_implementation = "flash_attention_2"
    with pytest.raises(ConfigError, match="flash_attention_2"):
        LocalEngine(model, qwen_tokenizer, cache_kind="static", decoder="graphs")


# ---- the decode attention that reads the cache once (engine/attention.py) ----------------------

@pytest.mark.parametrize("cache_kind, decoder", [("dynamic", "eager"), ("static", "graphs")])
def test_gqa_decode_attention_answers_like_sdpa(qwen_tokenizer, cache_kind, decoder):
    from logwarden.engine.attention import NAME, gqa_decode

    model = build_tiny_qwen()  # 4 query heads on 2 KV heads: grouped
    schema = assessment_json_schema()
    reference = LocalEngine(model, qwen_tokenizer).generate(REQUESTS, schema=schema, max_new_tokens=40)
    with gqa_decode(model) as attention:
        assert attention == NAME
        engine = LocalEngine(model, qwen_tokenizer, cache_kind=cache_kind, decoder=decoder)
        texts = [g.text for g in engine.generate(REQUESTS, schema=schema, max_new_tokens=40)]
    assert model.config._attn_implementation == "sdpa"  # restored
    assert texts == [g.text for g in reference]


def test_gqa_decode_attention_equals_sdpa_numerically_with_padding():
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from logwarden.engine.attention import gqa_decode_attention

    torch.manual_seed(0)
    module = torch.nn.Module().eval()  # training falls back to SDPA itself
    module.num_key_value_groups, module.is_causal = 3, True
    query, key, value = torch.randn(2, 6, 1, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8)
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 0]]).bool()[:, None, None, :]
    ours, _ = gqa_decode_attention(module, query, key, value, mask, scaling=0.3)
    theirs, _ = sdpa_attention_forward(module, query, key, value, mask, scaling=0.3)
    assert ours.shape == theirs.shape == (2, 1, 6, 8)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)
