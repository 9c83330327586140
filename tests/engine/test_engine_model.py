"""Integration: the real embedded model, loaded from its PyPI slices with the hash verified.

Few and slow (about a minute each on 2 CPU cores): run with `-m model`. The category is not
asserted — the 0.5B base model is naive — only that the constraint yields a valid assessment.
"""

from __future__ import annotations

import pytest
from _engine_helpers import ANALYST_SYSTEM

from logwarden.app.triage import prepare
from logwarden.engine.embedded import PACKS
from logwarden.schemas import LLMAssessment

SSHD_LINES = "\n".join(
    [f"Mar 11 02:14:{i:02d} web-01 sshd[{2200 + i}]: Failed password for root from 203.0.113.45 port {49800 + i} ssh2"
     for i in range(12)] + ["Mar 11 02:16:51 web-01 sshd[2398]: Accepted password for admin from 203.0.113.45 port 50122 ssh2"])
SQLI_LINE = ('198.51.100.23 - - [02/May/2024:10:01:13 +0000] "GET /products.php?id=1%27%20UNION%20SELECT%20username,'
             'password%20FROM%20users--%20 HTTP/1.1" 200 5123 "-" "sqlmap/1.7.2#stable (https://sqlmap.org)"')

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def engine():
    from logwarden.app.backends import resolve_adapter
    from logwarden.app.config import get_settings
    from logwarden.engine.load import load_engine

    return load_engine(engine="transformers", model="embedded", adapter=resolve_adapter("embedded", None),
                       quant="auto", threads=1, cache_dir=get_settings().model_cache)


def test_embedded_model_loads_from_the_packages_with_the_hash_verified(engine):
    info = engine.describe()
    assert info["sha256"] == PACKS["embedded"].sha256
    assert info["quant"] == "fp32" and info["attention"] == "sdpa" and info["footprint_mb"] > 1000
    assert engine.count_tokens(ANALYST_SYSTEM) > 250


@pytest.mark.parametrize("snippet", [SSHD_LINES, SQLI_LINE], ids=["sshd-brute-force", "sql-injection"])
def test_attack_windows_give_a_valid_assessment_pinned_to_their_digest(engine, snippet):
    triage = prepare(snippet, count_tokens=engine.count_tokens)
    [request] = triage.requests()
    generation = engine.generate([request], max_new_tokens=320)[0]
    assert generation.finished, generation.text
    assessment = LLMAssessment.model_validate_json(generation.text)
    assert assessment.findings or assessment.recommendation  # the recommendation is optional (analyze_v4)
    assert all(set(f.evidence) <= set(triage.parts[0].refs) for f in assessment.findings)
    assert generation.stats.cached_prefix_tokens > 250 and generation.stats.new_tokens > 5
