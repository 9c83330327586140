"""Issue 42 item 4: `logwarden backtest` replays the model over the records analysts closed, with the
reviewed examples and without, in one run, on a real SQLite store analysed from LogHub's OpenSSH lines.
The model is the scripted stand-in (its load through `open_engine` replaced) except in the last test,
which runs the real embedded model. Read-only: a missing store is an error and is not created."""

from __future__ import annotations

import json
import re

import pytest
from _fake_engine import FakeEngine
from click.testing import CliRunner

from logwarden.app.config import get_settings
from logwarden.app.store import RecordFilter, open_store
from logwarden.cli.main import main
from logwarden.engine import load
from logwarden.prompts import EXAMPLES_FENCE, FENCE_END
from logwarden.schemas.assessment import schema_refs

SPRAY = [f"Dec 10 07:{10 + i // 6:02d}:{i % 60:02d} LabSZ sshd[{24200 + i}]: Failed password for invalid user "
         f"{user} from 202.100.179.208 port {32400 + i} ssh2" for i, user in enumerate(["chen", "test", "oracle",
                                                                                        "admin", "pi", "git"] * 2)]
ROOT = [f"Dec 10 09:{i:02d}:13 LabSZ sshd[{25000 + i}]: message repeated 5 times: [ Failed password for root from "
        f"5.36.59.76 port {42393 + i} ssh2]" for i in range(8)]
ACCEPTED = [f"Dec 10 11:{i:02d}:02 LabSZ sshd[{26000 + i}]: Accepted password for fztu from 119.137.62.142 port "
            f"{49116 + i} ssh2" for i in range(3)]


def flags_every_prompt(request) -> dict:
    refs = schema_refs(request.schema) or ["L1"]
    return {"findings": [{"evidence": refs[:1], "anomaly": "Repeated failed SSH logins", "category": "brute_force",
                          "techniques": ["T1110"], "risk_level": "medium"}]}


@pytest.fixture
def engine(monkeypatch):
    fake = FakeEngine(flags_every_prompt)
    monkeypatch.setattr(load, "load_engine", lambda **_kw: fake)
    get_settings.cache_clear()
    yield fake
    get_settings.cache_clear()


@pytest.fixture
def reviewed_db(tmp_path):
    """A store analysed from the lines (rules only), each record closed with a verdict and a note naming it."""
    log = tmp_path / "auth.log"
    log.write_text("\n".join(SPRAY + ROOT + ACCEPTED) + "\n")
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    result = CliRunner().invoke(main, ["analyze", str(log), "--rules-only", "--final", "--db", db])
    assert result.exit_code == 0, result.output
    store = open_store(db)
    records = store.query_records(RecordFilter(), limit=100)
    assert len(records) >= 2
    for n, record in enumerate(records):
        reason = "false_positive" if n % 2 else "true_positive"
        store.add_review(record.id, status="closed", reason=reason, note=f"note-of-{record.id}")
    store.close()
    return db, records


def _invoke(*args):
    return CliRunner().invoke(main, ["backtest", *args])


def test_backtest_prints_both_arms_and_no_record_retrieves_itself(engine, reviewed_db):
    db, records = reviewed_db
    result = _invoke("--db", db, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report["arms"]) == {"retrieval", "no_retrieval"}
    assert report["records"] == len(records)
    for arm in report["arms"].values():
        assert arm["cases"] == len(records) and arm["no_verdict"] == 0
        assert arm["recall"] == 1.0 and arm["fp_rate"] == 1.0  # the stand-in flags everything
    assert report["arms"]["retrieval"]["examples_shown"] > 0
    with_examples = [r.user for r in engine.requests if EXAMPLES_FENCE in r.user]
    assert with_examples and len(with_examples) < len(engine.requests)  # one arm with, one without
    by_line = {r.evidence.exemplars[0].text: r.id for r in records}
    for prompt in with_examples:
        digest, examples = prompt.split(FENCE_END, 1)
        own = [rid for text, rid in by_line.items() if re.search(r"port \d+", text)
               and text.split("]: ", 1)[1] in digest]
        assert own and all(f"note-of-{rid}" not in examples for rid in own)
    assert any("note-of-" in prompt.split(FENCE_END, 1)[1] for prompt in with_examples)  # the others' reviews are
    assert re.search(r"backtest: \d+/\d+ prompts, ETA", result.stderr)


def test_backtest_text_and_limit(engine, reviewed_db):
    db, _records = reviewed_db
    result = _invoke("--db", db, "--limit", "1")
    assert result.exit_code == 0, result.output
    assert "retrieval: agreement" in result.stderr and "no_retrieval: agreement" in result.stderr
    assert "replaying 1 of" in result.stderr


def test_backtest_needs_an_existing_store_and_creates_none(engine, tmp_path):
    missing = tmp_path / "none.db"
    result = _invoke("--db", str(missing))
    assert result.exit_code == 2
    assert "Traceback" not in result.output and not missing.exists()


def test_backtest_without_reviews_says_so(engine, tmp_path):
    log = tmp_path / "auth.log"
    log.write_text("\n".join(SPRAY) + "\n")
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    assert CliRunner().invoke(main, ["analyze", str(log), "--rules-only", "--final", "--db", db]).exit_code == 0
    result = _invoke("--db", db)
    assert result.exit_code == 2 and "no closed record" in result.output


def test_backtest_help():
    result = CliRunner().invoke(main, ["backtest", "--help"])
    assert result.exit_code == 0 and "--limit" in result.output and "--json" in result.output


@pytest.mark.model
def test_backtest_with_the_real_embedded_model(reviewed_db):
    db, _records = reviewed_db
    get_settings.cache_clear()
    result = _invoke("--db", db, "--limit", "2", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    for arm in report["arms"].values():
        assert arm["cases"] == 2 and arm["cases"] - arm["no_verdict"] >= 1


def test_the_sample_balances_verdicts_and_categories():
    from _store_helpers import make_record

    from logwarden.app.backtest import sample

    def closed(n, reason, category):
        return make_record(line_start=n, line_end=n, status="closed", close_reason=reason, category=category)

    records = ([closed(n, "true_positive", "web_attack") for n in range(1, 41)]
               + [closed(n, "true_positive", "brute_force") for n in range(41, 44)]
               + [closed(n, "false_positive", "system_failure") for n in range(44, 50)]
               + [closed(50, "duplicate", "web_attack")])
    chosen = sample(records, 12, seed=3)
    assert len(chosen) == 12 and chosen == sample(records, 12, seed=3)
    assert sum(r.close_reason == "false_positive" for r in chosen) == 6
    assert sum(r.category == "brute_force" for r in chosen) == 3  # a small category is not drowned
    assert all(r.close_reason != "duplicate" for r in sample(records, None))


def test_examples_come_from_another_store_when_named(engine, reviewed_db, tmp_path):
    db, records = reviewed_db
    other = f"sqlite:///{tmp_path / 'other.db'}"
    log = tmp_path / "other.log"
    log.write_text("\n".join(s.replace("LabSZ", "OtherHost") for s in SPRAY) + "\n")
    assert CliRunner().invoke(main, ["analyze", str(log), "--rules-only", "--final", "--db", other]).exit_code == 0
    store = open_store(other)
    for record in store.query_records(RecordFilter(), limit=100):
        store.add_review(record.id, status="closed", reason="true_positive", note="from-the-other-store")
    store.close()
    result = _invoke("--db", db, "--examples-db", other, "--no-seed", "--json")
    assert result.exit_code == 0, result.output
    examples = [r.user.split(FENCE_END, 1)[1] for r in engine.requests if EXAMPLES_FENCE in r.user]
    assert examples and all("note-of-" not in e for e in examples)  # --db's own reviews are not the library
    assert any("from-the-other-store" in e for e in examples)
    assert json.loads(result.stdout)["library"] >= 1
    missing = _invoke("--db", db, "--examples-db", str(tmp_path / "none.db"))
    assert missing.exit_code == 2 and not (tmp_path / "none.db").exists()
