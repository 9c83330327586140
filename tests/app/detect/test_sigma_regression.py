"""SigmaHQ's own regression suite through logwarden: for every `regression_data/**/info.yml`, the
sample (its `.evtx`, and the same events as pretty-printed `.json`) is read by the real ingest
and parse path and scanned with SigmaHQ's pack; the rule the info.yml names must fire."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from _sigma_helpers import sigma_dir, sigmahq_pack_paths

from logwarden.app.detect import Detector, load_ruleset
from logwarden.app.events import ErrorRow
from logwarden.app.ingest import TailRead
from logwarden.app.parse import parse_stream


def _cases() -> list[tuple[str, str, Path]]:
    cases = []
    for info in sorted((sigma_dir() / "regression_data").rglob("info.yml")):
        data = yaml.safe_load(info.read_text(encoding="utf-8"))
        rule_id = data["rule_metadata"][0]["id"]
        for test in data.get("regression_tests_info") or []:  # one info.yml (cisco) ships no sample
            evtx = sigma_dir() / test["path"]
            for sample in (evtx, evtx.with_suffix(".json")):
                name = f"{info.parent.relative_to(sigma_dir() / 'regression_data')}{sample.suffix}"
                cases.append((name, rule_id, sample))
    return cases


CASES = _cases()


@pytest.fixture(scope="session")
def sigmahq(request):
    """SigmaHQ's pack, compiled once; the compiled pack is cached in pytest's cache between runs."""
    cache = Path(request.config.cache.mkdir("logwarden-sigma"))
    return load_ruleset(sigmahq_pack_paths(), cache_dir=cache)


def test_the_suite_is_all_there():
    assert len({name.rsplit(".", 1)[0] for name, _, _ in CASES}) >= 202 and len(CASES) >= 404


@pytest.mark.parametrize("name, rule_id, sample", CASES, ids=[c[0] for c in CASES])
def test_named_rule_fires_on_its_sample(sigmahq, name, rule_id, sample):
    lines = [line for line in TailRead(sample, max_line_bytes=64 * 1024 * 1024) if not isinstance(line, ErrorRow)]
    decision, events = parse_stream(lines, path=str(sample))
    events = list(events)
    assert events and decision.name == "windows", decision.reason
    fired = {s.rule_id for s in Detector(sigmahq).scan(events)}
    assert rule_id in fired, f"{rule_id} did not fire on {sample.name} ({len(events)} events); fired: {sorted(fired)[:10]}"
