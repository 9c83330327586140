"""Integration: the real embedded model, loaded from its PyPI slices with the hash verified.

Few and slow (about a minute each on 2 CPU cores): run with `-m model`. The category is not
asserted — the 0.5B base model is naive — only that the constraint yields a valid assessment.
"""

from __future__ import annotations

import pytest

from _engine_helpers import ANALYST_SYSTEM, SQLI_USER, SSHD_USER
from logwarden.engine.api import Request
from logwarden.engine.embedded import PACKS
from logwarden.schemas import LLMAssessment, assessment_json_schema

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def engine():
    from logwarden.app.config import get_settings
    from logwarden.engine.load import load_engine

    return load_engine(engine="transformers", model="embedded", quant="auto", threads=1,
                       cache_dir=get_settings().model_cache)


def test_embedded_model_loads_from_the_packages_with_the_hash_verified(engine):
    info = engine.describe()
    assert info["sha256"] == PACKS["embedded"].sha256
    assert info["quant"] == "fp32" and info["attention"] == "sdpa" and info["footprint_mb"] > 1000
    assert engine.count_tokens(ANALYST_SYSTEM) > 250


@pytest.mark.parametrize("user", [SSHD_USER, SQLI_USER], ids=["sshd-brute-force", "sql-injection"])
def test_attack_windows_give_a_valid_assessment(engine, user):
    generation = engine.generate([Request(ANALYST_SYSTEM, user)], schema=assessment_json_schema(),
                                 max_new_tokens=512)[0]
    assert generation.finished, generation.text
    assessment = LLMAssessment.model_validate_json(generation.text)
    assert assessment.anomaly and assessment.recommendation
    assert generation.stats.cached_prefix_tokens > 250 and generation.stats.new_tokens > 20
