"""Fast engine tests on a tiny random Qwen2 with the real Qwen tokenizer (see _engine_helpers)."""

from __future__ import annotations

import json
import re
from typing import Annotated, Literal

import pytest
import torch
import xgrammar as xgr
from _engine_helpers import (  # noqa: F401
    ANALYST_SYSTEM,
    SQLI_USER,
    SSHD_USER,
    build_tiny_qwen,
    qwen_tokenizer,
    tiny_engine,
    tiny_model,
)
from pydantic import BaseModel, ConfigDict, Field

from logwarden.engine import prefix_cache as prefix_module
from logwarden.engine.api import Request, Sampling
from logwarden.engine.constrained import GrammarCache, _control_free_mask, token_bound
from logwarden.engine.detok import Detokenizer
from logwarden.engine.generate import adjust, sample
from logwarden.engine.local import EngineInfo, LocalEngine
from logwarden.errors import ModelError
from logwarden.schemas import LLMAssessment, assessment_json_schema
from logwarden.schemas.assessment import answer_schema

USERS = [SSHD_USER, SQLI_USER, "Mar 11 03:00:01 web-01 CRON[3321]: (root) CMD (run-parts /etc/cron.hourly)",
         "198.51.100.7 - - [02/May/2024:10:02:00 +0000] \"GET /health HTTP/1.1\" 200 2 \"-\" \"kube-probe/1.29\"",
         "one short line"]
REQUESTS = [Request(ANALYST_SYSTEM, u) for u in USERS]


def texts(generations) -> list[str]:
    return [g.text for g in generations]


def test_greedy_is_deterministic(tiny_engine):
    first = tiny_engine.generate(REQUESTS[:2], max_new_tokens=16)
    second = tiny_engine.generate(REQUESTS[:2], max_new_tokens=16)
    assert texts(first) == texts(second)
    assert first[0].text != first[1].text  # the output depends on the prompt, so identity tests mean something


@pytest.mark.parametrize("budget", [1, 5, 23])
def test_max_new_tokens_bounds_every_answer(tiny_engine, budget):
    for generation in tiny_engine.generate(REQUESTS, max_new_tokens=budget):
        assert 1 <= generation.stats.new_tokens <= budget
        if generation.stats.new_tokens == budget:
            assert not generation.finished or budget == 1


def test_prefix_reuse_is_token_identical_and_prefills_once(tiny_model, qwen_tokenizer, monkeypatch):
    calls = []
    original = prefix_module.prefill_prefix
    monkeypatch.setattr("logwarden.engine.local.prefill_prefix",
                        lambda *a, **k: calls.append(1) or original(*a, **k))
    reuse = LocalEngine(tiny_model, qwen_tokenizer, prefix_reuse=True)
    plain = LocalEngine(tiny_model, qwen_tokenizer, prefix_reuse=False)
    with_reuse = reuse.generate(REQUESTS, max_new_tokens=24) + reuse.generate(REQUESTS[:1], max_new_tokens=24)
    without = plain.generate(REQUESTS, max_new_tokens=24) + plain.generate(REQUESTS[:1], max_new_tokens=24)
    assert texts(with_reuse) == texts(without)
    assert len(calls) == 1  # one prefill of the system prefix for both calls and all rows
    assert with_reuse[0].stats.cached_prefix_tokens > 300 and without[0].stats.cached_prefix_tokens == 0
    assert with_reuse[0].stats.prompt_tokens == without[0].stats.prompt_tokens


def test_batched_greedy_equals_single_requests(tiny_model, qwen_tokenizer):
    engine = LocalEngine(tiny_model, qwen_tokenizer, max_batch=8)
    batched = engine.generate(REQUESTS, max_new_tokens=24)
    singles = [engine.generate([r], max_new_tokens=24)[0] for r in REQUESTS]
    assert texts(batched) == texts(singles)
    assert batched[0].stats.batch_size == len(REQUESTS)


def test_small_batches_keep_request_order(tiny_model, qwen_tokenizer):
    big = LocalEngine(tiny_model, qwen_tokenizer, max_batch=8).generate(REQUESTS, max_new_tokens=12)
    small = LocalEngine(tiny_model, qwen_tokenizer, max_batch=2).generate(REQUESTS, max_new_tokens=12)
    assert texts(small) == texts(big)
    assert max(g.stats.batch_size for g in small) == 2


def test_token_budget_splits_batches(tiny_model, qwen_tokenizer):
    engine = LocalEngine(tiny_model, qwen_tokenizer, max_batch=8, token_budget=2_000)
    generations = engine.generate(REQUESTS, max_new_tokens=12)
    assert all(g.stats.batch_size * (g.stats.prompt_tokens + 12) <= 2_000 or g.stats.batch_size == 1
               for g in generations)
    assert texts(generations) == texts(LocalEngine(tiny_model, qwen_tokenizer).generate(REQUESTS, max_new_tokens=12))


def test_requests_with_different_system_prompts_batch_separately(tiny_engine):
    mixed = [REQUESTS[0], Request("You are terse.", USERS[0]), REQUESTS[1]]
    batched = tiny_engine.generate(mixed, max_new_tokens=12)
    singles = [tiny_engine.generate([r], max_new_tokens=12)[0] for r in mixed]
    assert texts(batched) == texts(singles)
    assert batched[0].text != batched[1].text


class Small(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: str = Field(min_length=1, max_length=12)
    level: Literal["low", "high"]
    tags: list[Annotated[str, Field(max_length=4)]] = Field(max_length=2)


def small_schema() -> dict:
    return Small.model_json_schema()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_constrained_output_finishes_within_the_schema_bound_and_validates(tiny_engine, seed):
    schema = small_schema()
    sampling = Sampling(temperature=1.0, seed=seed)  # sampled: many different paths through the grammar
    generations = tiny_engine.generate(REQUESTS[:3], schema=schema, max_new_tokens=token_bound(schema),
                                       sampling=sampling)
    for generation in generations:
        assert generation.finished
        Small.model_validate_json(generation.text)


def test_llm_assessment_finishes_and_validates_when_budget_covers_the_schema(tiny_engine):
    schema = assessment_json_schema()
    generations = tiny_engine.generate(REQUESTS[:2], schema=schema, max_new_tokens=token_bound(schema))
    for generation in generations:
        assert generation.finished, generation.text[-200:]
        assessment = LLMAssessment.model_validate_json(generation.text)
        assert all(len(f.anomaly) <= 160 for f in assessment.findings)


EVIDENCE = re.compile(r'"evidence": \[([^\]]*)')  # xgrammar's separators are ", " and ": "


def test_per_window_grammar_only_admits_that_windows_ids(tiny_engine):
    """The grammar of one prompt admits exactly the evidence ids its digest shows: another window's
    line or template id cannot even be started, and the generic schema would have accepted it."""
    compiled = tiny_engine._grammar_cache().compiled(answer_schema(["T1", "T2", "L17", "L230"]))
    head = '{"findings": [{"evidence": ["'
    for ref, admitted in (("L17", True), ("L230", True), ("T2", True), ("L18", False), ("L2", False),
                          ("T3", False), ("L1700", False)):
        assert xgr.GrammarMatcher(compiled).accept_string(f'{head}{ref}"') is admitted, ref
    generic = tiny_engine._grammar_cache().compiled(assessment_json_schema())
    assert xgr.GrammarMatcher(generic).accept_string(f'{head}L18"')


def test_rows_of_one_batch_follow_their_own_grammars(tiny_engine):
    """Two windows in one batch, each with its own evidence ids: every id a row writes is one of its own."""
    own = {0: ["T1", "L3", "L4"], 1: ["T1", "T2", "L900"], 2: ["L41"]}
    requests = [Request(ANALYST_SYSTEM, USERS[i], schema=answer_schema(refs)) for i, refs in own.items()]
    written = {i: set() for i in own}
    for seed in range(6):
        generations = tiny_engine.generate(requests, max_new_tokens=80, sampling=Sampling(temperature=1.0, seed=seed))
        assert max(g.stats.batch_size for g in generations) == len(requests)  # one batch, three grammars
        for i, generation in enumerate(generations):
            for items in EVIDENCE.findall(generation.text):
                written[i] |= {item.strip(' "') for item in items.split(",") if item.strip(' "')}
    assert any(written.values()), "the random model never wrote a finding: the test proved nothing"
    for i, refs in own.items():
        assert written[i] <= set(refs), (i, written[i])


def test_constrained_and_free_requests_in_one_call(tiny_engine):
    mixed = [Request(ANALYST_SYSTEM, USERS[0], schema=answer_schema(["L1"])), Request(ANALYST_SYSTEM, USERS[1])]
    both = tiny_engine.generate(mixed, max_new_tokens=20)
    assert both[0].text.startswith('{"findings": [') and not both[1].text.startswith('{"findings"')
    assert both[1].text == tiny_engine.generate(mixed[1:], max_new_tokens=20)[0].text


def test_compiled_grammars_are_an_lru_cache_with_stats(qwen_tokenizer):
    cache = GrammarCache(qwen_tokenizer, 151_936, [151_645], max_size=2)
    schemas = [answer_schema([f"L{n}"]) for n in (1, 2, 3)]
    for schema in schemas:
        cache.compiled(schema)
    assert len(cache) == 2 and cache.stats.compiled == 3 and cache.stats.compile_s > 0
    cache.compiled(schemas[2])
    assert cache.stats.hits == 1 and cache.stats.compiled == 3
    cache.compiled(schemas[0])  # evicted (least recently used): compiled again
    assert cache.stats.compiled == 4


def test_unfinished_constrained_output_is_a_valid_prefix(tiny_engine, qwen_tokenizer):
    # a document no 30 tokens can finish, whatever path the random model takes
    schema = {"type": "object", "additionalProperties": False, "required": ["note"],
              "properties": {"note": {"type": "string", "minLength": 300, "maxLength": 400}}}
    generation = tiny_engine.generate(REQUESTS[:1], schema=schema, max_new_tokens=30)[0]
    assert not generation.finished and generation.stats.new_tokens == 30
    with pytest.raises(json.JSONDecodeError):
        json.loads(generation.text)
    compiled = tiny_engine._grammar_cache().compiled(schema)
    assert xgr.GrammarMatcher(compiled).accept_string(generation.text)


def test_stream_pieces_join_to_the_batch_answer(tiny_engine):
    for request, schema in [(REQUESTS[0], None), (REQUESTS[1], assessment_json_schema())]:
        expected = tiny_engine.generate([request], schema=schema, max_new_tokens=40)[0]
        stream = tiny_engine.stream(request, schema=schema, max_new_tokens=40)
        pieces = list(stream)
        assert "".join(pieces) == expected.text
        assert len(pieces) > 1
        assert stream.generation is not None and stream.generation.text == expected.text
        assert stream.generation.stats.new_tokens == expected.stats.new_tokens
        assert stream.generation.stats.ttft_s > 0


def test_token_bound_covers_patterns_and_refuses_unbounded_strings():
    assert token_bound({"type": "string", "pattern": "^T[0-9]{4}([.][0-9]{3})?$"}) == 1 + 2 + 6 * 9
    with pytest.raises(ModelError, match="maxLength"):
        token_bound({"type": "string", "pattern": "^a+$"})


def test_control_character_ban_uses_xgrammars_bit_layout():
    vocab = [b"a", b"\t", b"ok", b"x\ny"] + [b"z"] * 36 + [b"\x1f"]  # 41 tokens: two bitmask words
    keep = _control_free_mask(vocab, len(vocab))
    logits = torch.zeros((1, len(vocab)))
    xgr.apply_token_bitmask_inplace(logits, keep.unsqueeze(0), vocab_size=len(vocab))
    banned = torch.isinf(logits[0]).nonzero().flatten().tolist()
    assert banned == [1, 3, 40]


def test_detokenizer_never_splits_a_multibyte_character(qwen_tokenizer):
    text = "登录失败 🔒 from 203.0.113.45 — réessayez 🛡️"
    ids = qwen_tokenizer(text, add_special_tokens=False)["input_ids"]
    assert any("\ufffd" in qwen_tokenizer.decode([i]) for i in ids)  # some token holds a partial character
    detok = Detokenizer(qwen_tokenizer)
    pieces = [detok.push(i) for i in ids] + [detok.flush()]
    assert all("\ufffd" not in p for p in pieces)
    assert "".join(pieces) == text


def test_simulated_cuda_oom_halves_the_batch_and_drops_nothing(tiny_model, qwen_tokenizer, monkeypatch):
    engine = LocalEngine(tiny_model, qwen_tokenizer, max_batch=8)
    expected = texts(engine.generate(REQUESTS, max_new_tokens=10))
    real_run = engine._run_chunk
    tried, ran = [], []

    def run_or_oom(chunk, *args):
        tried.append(len(chunk))
        if len(chunk) > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        ran.append(len(chunk))
        return real_run(chunk, *args)

    monkeypatch.setattr(engine, "_run_chunk", run_or_oom)
    generations = engine.generate(REQUESTS, max_new_tokens=10)
    assert texts(generations) == expected and all(g.error is None for g in generations)
    assert tried[:3] == [5, 2, 3] and sum(ran) == len(REQUESTS) and max(ran) <= 2
    assert engine.max_batch == 2  # later calls start from the size that fit


def test_oom_at_batch_one_reports_an_error_without_losing_the_others(tiny_model, qwen_tokenizer, monkeypatch):
    engine = LocalEngine(tiny_model, qwen_tokenizer, max_batch=8)
    real_run = engine._run_chunk
    poisoned = REQUESTS[1]

    def run_or_oom(chunk, *args):
        if any(job.index == 1 for job in chunk):
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return real_run(chunk, *args)

    monkeypatch.setattr(engine, "_run_chunk", run_or_oom)
    generations = engine.generate(REQUESTS, max_new_tokens=6)
    assert len(generations) == len(REQUESTS)
    assert generations[1].error and "out of memory" in generations[1].error and not generations[1].finished
    assert all(g.error is None and g.stats.new_tokens == 6 for i, g in enumerate(generations) if i != 1)
    assert poisoned is REQUESTS[1]


def test_sampling_is_reproducible_with_a_seed_and_top_p_near_zero_is_greedy(tiny_engine):
    seeded = Sampling(temperature=1.2, top_p=0.9, seed=7)
    a = tiny_engine.generate(REQUESTS[:2], max_new_tokens=16, sampling=seeded)
    b = tiny_engine.generate(REQUESTS[:2], max_new_tokens=16, sampling=seeded)
    assert texts(a) == texts(b)
    greedy = tiny_engine.generate(REQUESTS[:2], max_new_tokens=16)
    assert texts(a) != texts(greedy)
    nucleus_of_one = tiny_engine.generate(REQUESTS[:2], max_new_tokens=16,
                                          sampling=Sampling(temperature=1.0, top_p=1e-6, seed=1))
    assert texts(nucleus_of_one) == texts(greedy)


def test_repetition_penalty_pushes_seen_tokens_down_both_signs():
    logits = torch.tensor([[2.0, -1.0, 1.5, 0.5]])
    seen = torch.tensor([[True, True, False, False]])
    adjusted = adjust(logits.clone(), seen, [0], Sampling(repetition_penalty=2.0), None)
    assert adjusted.tolist() == [[1.0, -2.0, 1.5, 0.5]]  # CTRL rule: divide positives, multiply negatives
    assert sample(adjusted, Sampling(), None).tolist() == [2]  # the unseen token now wins greedily


def test_repetition_penalty_reaches_the_loop(qwen_tokenizer):
    # default-scale init: this model repeats one token forever, the case the penalty exists for
    engine = LocalEngine(build_tiny_qwen(init_std=0.02), qwen_tokenizer)
    plain = engine.generate(REQUESTS[:1], max_new_tokens=16)[0]
    penalised = engine.generate(REQUESTS[:1], max_new_tokens=16, sampling=Sampling(repetition_penalty=3.0))[0]
    assert len(set(plain.text)) == 1
    assert len(set(penalised.text)) > 1


def test_static_cache_gives_the_same_greedy_output(tiny_model, qwen_tokenizer):
    dynamic = LocalEngine(tiny_model, qwen_tokenizer).generate(REQUESTS, max_new_tokens=12)
    static = LocalEngine(tiny_model, qwen_tokenizer, cache_kind="static").generate(REQUESTS, max_new_tokens=12)
    assert texts(static) == texts(dynamic)


def test_count_tokens_and_describe(tiny_model, qwen_tokenizer):
    engine = LocalEngine(tiny_model, qwen_tokenizer, info=EngineInfo(model_name="tiny", quant="fp32"))
    assert engine.count_tokens("Failed password for root from 203.0.113.45") == len(
        qwen_tokenizer("Failed password for root from 203.0.113.45", add_special_tokens=False)["input_ids"])
    info = engine.describe()
    assert info["model"] == "tiny" and info["dtype"] == "float32" and info["device"] == "cpu"
    assert info["footprint_mb"] > 0 and info["threads"] >= 1 and info["attention"] == "sdpa"


def _model_of_class(cls, source):
    model = cls(source.config).eval()
    model.load_state_dict(source.state_dict())
    return model


def test_models_taking_past_key_values_get_their_cache(tiny_model, qwen_tokenizer):
    """transformers ≤ 5.17 names the forward's cache `past_key_values`; a cache passed as `cache`
    there vanishes into **kwargs and every step runs without context (seen as garbage on an H200)."""
    from transformers import Qwen2ForCausalLM

    class OlderQwen2(Qwen2ForCausalLM):
        def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                    use_cache=None, logits_to_keep=0, **kwargs):
            assert "cache" not in kwargs, "the engine passed the cache under a name this model ignores"
            return super().forward(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                                   use_cache=use_cache, logits_to_keep=logits_to_keep, cache=past_key_values)

    older = LocalEngine(_model_of_class(OlderQwen2, tiny_model), qwen_tokenizer)
    current = LocalEngine(tiny_model, qwen_tokenizer)
    assert texts(older.generate(REQUESTS, max_new_tokens=16)) == texts(current.generate(REQUESTS, max_new_tokens=16))


def test_a_model_that_ignores_the_cache_is_an_error_not_garbage(tiny_model, qwen_tokenizer):
    from transformers import Qwen2ForCausalLM

    class Forgetful(Qwen2ForCausalLM):
        def forward(self, input_ids=None, attention_mask=None, position_ids=None, use_cache=None,
                    logits_to_keep=0, **kwargs):  # takes the cache under no name at all
            kwargs.pop("cache", None), kwargs.pop("past_key_values", None)
            return super().forward(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                                   use_cache=use_cache, logits_to_keep=logits_to_keep)

    engine = LocalEngine(_model_of_class(Forgetful, tiny_model), qwen_tokenizer)
    with pytest.raises(ModelError, match="KV cache"):
        engine.generate(REQUESTS[:1], max_new_tokens=4)
