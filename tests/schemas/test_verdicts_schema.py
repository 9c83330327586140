"""The per-prompt answer schema asks one enumerated verdict per deviation shown, in order (analyze_v4),
and both grammar engines (xgrammar on CUDA, llguidance in llama.cpp) compile it to exactly that."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from logwarden.schemas import LLMAssessment
from logwarden.schemas.assessment import answer_schema, schema_deviations


def test_a_prompt_with_deviations_requires_one_verdict_per_deviation_in_order():
    schema = answer_schema(["T1", "L3", "L9"], ["L9", "L3", "L9"])
    assert schema_deviations(schema) == ["L9", "L3"] and schema["required"][0] == "verdicts"
    verdicts = schema["properties"]["verdicts"]
    assert verdicts["minItems"] == verdicts["maxItems"] == 2 and verdicts["items"] is False


def test_a_prompt_without_deviations_has_no_verdicts_and_an_optional_recommendation():
    schema = answer_schema(["L1"])
    assert "verdicts" not in schema["properties"] and schema["required"] == ["findings"]
    assert LLMAssessment.model_validate({"findings": []}).recommendation == ""


def test_a_verdict_is_enumerated_not_written():
    ok = {"line": "L3", "verdict": "attack", "stage": "initial_access", "category": "web_attack"}
    LLMAssessment.model_validate({"verdicts": [ok], "findings": []})
    for bad in ({"verdict": "maybe"}, {"stage": "phase 2"}, {"category": "sqli"}):
        with pytest.raises(ValidationError):
            LLMAssessment.model_validate({"verdicts": [ok | bad], "findings": []})


def test_xgrammar_admits_only_the_verdicts_in_order_and_before_the_findings():
    xgr = pytest.importorskip("xgrammar")  # a dependency of the transformers extra, installed by make setup-test
    grammar = xgr.Grammar.from_json_schema(json.dumps(answer_schema(["L3", "L9"], ["L9", "L3"])), any_whitespace=False)

    def verdict(line):
        return {"line": line, "verdict": "benign", "stage": "none", "category": "benign"}

    def accepts(answer):
        return xgr.testing._is_grammar_accept_string(grammar, json.dumps(answer))

    assert accepts({"verdicts": [verdict("L9"), verdict("L3")], "findings": []})
    assert not accepts({"verdicts": [verdict("L3"), verdict("L9")], "findings": []})  # out of order
    assert not accepts({"verdicts": [verdict("L9")], "findings": []})  # one missing
    assert not accepts({"findings": []})


def test_llama_cpps_grammar_compiles_the_schema():
    import llguidance
    import xllamacpp

    from logwarden.engine.llamacpp import COMPACT_JSON

    grammar = xllamacpp.json_schema_to_grammar({**answer_schema(["L3", "L9"], ["L9", "L3"]), "x-guidance": COMPACT_JSON})
    assert llguidance.LLMatcher.validate_grammar(grammar) == ""  # what the engine checks: no problem reported
