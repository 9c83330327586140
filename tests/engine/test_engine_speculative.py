"""Speculative decoding on llama.cpp: under greedy sampling and the schema's grammar, an answer with
a draft model is the model's own answer byte for byte, whether the draft agrees (the same weights)
or mostly not (other random weights; their flat guesses are drafted only with `draft_p_min` 0); the drafted and accepted tokens are counted."""

from __future__ import annotations

import pytest
from _gguf_helpers import write_tiny_qwen2

from logwarden.engine.api import Request, Sampling
from logwarden.engine.llamacpp import LlamaCppConfig, LlamaCppEngine

SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string"}, "score": {"type": "integer"}},
          "required": ["verdict", "score"]}
PROMPTS = [Request(system="You judge log lines.", user=user) for user in (
    "Mar 12 02:13:12 web01 sshd[3180]: Invalid user oracle from 203.0.113.66 port 57299",
    'GET /item.php?id=1%20UNION%20SELECT%20user,password%20FROM%20users-- HTTP/1.1" 200 512',
    "type=EXECVE msg=audit(1710210081.014:21051): argc=3 a0=\"sh\" a1=\"-c\" a2=\"id\"")]


def _answers(model, draft=None, schema=SCHEMA):
    engine = LlamaCppEngine(LlamaCppConfig(gguf=model, draft_gguf=draft, draft_tokens=4, draft_p_min=0.0, slots=1, ctx_per_slot=512,
                                           threads=1))
    try:
        return [engine.generate([r], max_new_tokens=40, schema=schema, sampling=Sampling(temperature=0.0))[0]
                for r in PROMPTS]
    finally:
        engine.close()


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    return write_tiny_qwen2(folder / "model.gguf", seed=0), write_tiny_qwen2(folder / "draft.gguf", seed=3)


@pytest.mark.parametrize("schema", [SCHEMA, None], ids=["grammar", "free"])
def test_greedy_answers_with_a_draft_are_the_models_own(pair, schema):
    model, other = pair
    alone = _answers(model, schema=schema)
    for draft in (model, other):
        drafted = _answers(model, draft, schema=schema)
        assert [g.text for g in drafted] == [g.text for g in alone]
        assert all(g.stats.drafted_tokens > 0 for g in drafted)
    assert all(g.stats.drafted_tokens == 0 for g in alone)


def test_a_draft_of_the_same_weights_is_accepted_and_another_mostly_not(pair):
    model, other = pair
    same = _answers(model, model, schema=None)
    different = _answers(model, other, schema=None)
    assert sum(g.stats.accepted_tokens for g in same) > sum(g.stats.accepted_tokens for g in different)


def test_a_draft_model_is_refused_where_it_cannot_run(tmp_path):
    from logwarden.engine.load import load_engine, load_llamacpp
    from logwarden.errors import ConfigError

    with pytest.raises(ConfigError, match="transformers engine has no speculative"):
        load_engine(engine="transformers", model="embedded", draft_model="embedded", cache_dir=tmp_path)
    with pytest.raises(ConfigError, match="takes a GGUF model"):
        load_llamacpp(model="embedded", draft_model="Qwen/Qwen2.5-0.5B", cache_dir=tmp_path)
