"""The model's review queue: rules' and baselines' records are stored as windows are cut (the model
never blocks ingestion); prompts are answered most suspicious first, in batches across windows and
files, within a budget; what the budget leaves is stored as awaiting review and answered later by
`logwarden review --pending`, nothing lost or doubled; the model judges each baseline deviation
(its verdict said and kept, its level the baseline's), never lowers a rule; a kill during the review loses no ingested
line. The engine is a stand-in (the code under test is the queue and the merge around it)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from _fake_engine import FakeEngine
from _log_fixtures import write_logs
from click.testing import CliRunner

from logwarden.app import backends
from logwarden.app.baseline.learn import learn_paths
from logwarden.app.config import Settings
from logwarden.app.pending import review_pending
from logwarden.app.pipeline import Pipeline
from logwarden.app.review import Budget
from logwarden.app.run_options import RunOptions
from logwarden.app.store import RecordFilter, open_store
from logwarden.cli.main import main
from logwarden.schemas.assessment import schema_deviations

ORDINARY = "Ordinary page views from known clients."


def benign(request) -> str:
    """The answer that judges every deviation the prompt shows benign (its schema names their lines)."""
    verdicts = [{"line": ref, "verdict": "benign", "stage": "none", "category": "benign"}
                for ref in schema_deviations(request.schema or {})]
    return json.dumps({"verdicts": verdicts, "findings": [], "recommendation": ORDINARY})
STAMP = "10/Mar/2024:06:55:46 +0000"


class Crash(BaseException):
    """What a kill looks like to the pipeline: nothing after it runs (not an engine fault it handles)."""


INCIDENT_LEAD = "Untrusted incident records"


def review_calls(engine: FakeEngine) -> list[list[str]]:
    """The user prompts of each review call (incident stories left out)."""
    return [[r.user for r in call] for call in engine.calls if not all(r.user.startswith(INCIDENT_LEAD) for r in call)]


def reviewer(answer=benign, crash_on_call: int | None = None) -> FakeEngine:
    """Answers every prompt with `answer(request)`; review call number `crash_on_call` (from 0) is a `Crash`."""
    engine = FakeEngine()

    def reply(request):
        if crash_on_call is not None and len(review_calls(engine)) == crash_on_call + 1:
            return Crash()
        return answer(request)

    engine.script = reply
    return engine


def access(ip: str, target: str) -> str:
    return f'{ip} - - [{STAMP}] "GET {target} HTTP/1.1" 200 512 "-" "Mozilla/5.0"'


@pytest.fixture()
def site(tmp_path: Path):
    """A store that learned a shop's normal traffic, and today's log: normal requests and several
    clients each sending a renamed parameter (deviations), one of them with an absurd quantity too."""
    rng = random.Random(1)
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "access.log.1").write_text("\n".join(
        access(f"10.{i // 200}.{i % 200}.1", f"/shop/item.php?id={rng.randint(1, 99)}&qty={rng.randint(1, 9)}")
        for i in range(300)) + "\n")
    learn_paths(store, [tmp_path / "old"])
    lines = [access(f"10.1.0.{i}", f"/shop/item.php?id={i}&qty=1") for i in range(40)]
    for i in range(6):  # six deviating clients, far apart (one window each when windows are 10 lines)
        lines[2 + i * 5] = access(f"198.51.100.{i}", f"/shop/item.php?id=3&qty=1&debug{i}=1")
    # two families agree (a new name, a quantity far out of range): medium, and no rule explains it
    lines[35] = access("198.51.100.99", "/shop/item.php?id=3&qty=987654321&sort=1")
    (tmp_path / "today").mkdir()
    (tmp_path / "today" / "access.log").write_text("\n".join(lines) + "\n")
    return store, tmp_path / "today"


def run(store, engine, folder, **options):
    return Pipeline(store, engine, RunOptions(final=True, **options)).analyze([folder])


def deviation_records(store):
    return [r for r in store.query_records(RecordFilter(), limit=1000) if any(
        d.startswith("lw-baseline-") for d in r.detections)]


def test_only_windows_with_deviations_reach_the_model_and_the_riskiest_go_first(site):
    store, today = site
    engine = reviewer()
    metrics = run(store, engine, today, window_max_lines=10, max_batch=1)
    assert len(deviation_records(store)) == 7 and metrics.windows_llm == metrics.prompts_queued == 4
    assert len(review_calls(engine)) == 4 and all(len(call) == 1 for call in review_calls(engine))
    assert "sort=" in review_calls(engine)[0][0]  # the medium deviation (two families agree) was asked first
    assert all("lines:" in call[0] and "unlike this source's learned baseline" in call[0] for call in review_calls(engine))


def test_prompts_of_several_windows_share_a_batch(site):
    store, today = site
    engine = reviewer()
    run(store, engine, today, window_max_lines=10, max_batch=8)
    assert [len(call) for call in review_calls(engine)] == [4]


def test_a_deviation_the_model_judges_normal_keeps_its_level_and_says_so(site):
    store, today = site
    before = {r.id: r.risk_level for r in (run(store, None, today, rules_only=True) and deviation_records(store))}
    metrics = run(store, reviewer(), today)
    records = deviation_records(store)
    # the model may only raise a deviation: its "benign" on realdata's held-out side was mostly an attack
    assert records and all(r.risk_level == before[r.id] != "info" and r.decided_by == "rules+llm" for r in records)
    assert all(f"judged normal by the model: {ORDINARY}" in r.anomaly for r in records)
    assert all(r.verdict == {"verdict": "benign", "stage": "none", "category": "benign"} for r in records)
    assert metrics.deviations_dismissed == len(records)


def test_a_deviations_verdict_is_said_and_kept_and_its_level_stays_the_baselines(site):
    """An attack verdict raised a deviation to medium before; on realdata's held-out side that added
    false positives and no detection (EVAL.md), so every verdict now leaves the level as it was."""
    store, today = site
    before = {r.id: r.risk_level for r in (run(store, None, today, rules_only=True) and deviation_records(store))}

    def judge(request):
        # the prompt shows each line as " L36 (T1): …" (after the deviations' notes); "sort=" and "debug0=" are judged attacks
        lines = {ln.split()[0].rstrip(":"): ln for ln in request.user.split("\n") if ln.startswith(" L")}
        verdicts = [{"line": ref, "verdict": "attack" if any(k in lines.get(ref, "") for k in ("sort=", "debug0="))
                     else "suspicious", "stage": "initial_access", "category": "web_attack"}
                    for ref in schema_deviations(request.schema)]
        return json.dumps({"verdicts": verdicts, "findings": []})

    run(store, reviewer(judge), today)
    records = deviation_records(store)
    attacks = [r for r in records if r.verdict.get("verdict") == "attack"]
    assert sorted(before[r.id] for r in attacks) == ["low", "medium"]  # a low one (debug0) and a medium one (sort)
    assert all(r.risk_level == before[r.id] and r.decided_by == "rules+llm" for r in records)
    assert all("judged attack by the model, initial access" in r.anomaly for r in attacks)
    others = [r for r in records if r not in attacks]
    assert others and all((r.risk_level, r.verdict["verdict"]) == ("low", "suspicious") for r in others)


def test_an_answer_without_verdicts_dismisses_nothing(site):
    store, today = site
    run(store, reviewer(lambda _r: json.dumps({"findings": [], "recommendation": ORDINARY})), today)
    records = deviation_records(store)
    assert records and all(r.risk_level != "info" and r.verdict == {} for r in records)


def test_a_deviation_the_model_confirms_takes_its_text_keeps_the_baselines_level_and_category_and_dismisses_no_other(site):
    """A finding on a deviation alone explains it but does not raise it: on realdata's held-out side
    such raises were on benign requests, and added no detection (EVAL.md)."""
    store, today = site

    def answer(user):
        line = next(n for n in user.split("\n") if "sort=" in n and n.startswith(" L"))
        ref = line.split()[0]  # " L36 (T1): …" → "L36"
        return json.dumps({"findings": [{"evidence": [ref], "anomaly": "SQL injection in sort",
                                         "category": "reconnaissance", "techniques": ["T1190"], "risk_level": "high"}],
                           "recommendation": "Block 198.51.100.99."})

    run(store, reviewer(lambda r: answer(r.user) if "sort=" in r.user else benign(r)), today)
    records = deviation_records(store)
    [confirmed] = [r for r in records if r.anomaly == "SQL injection in sort"]
    # the base model's categories for web deviations were wrong twice as often as the baseline's (EVAL.md)
    assert (confirmed.risk_level, confirmed.category, confirmed.decided_by) == ("medium", "web_attack", "rules+llm")
    # one prompt showed all seven; an answer with a finding speaks only for its finding's lines (it names
    # FINDINGS_MAX at most), so the other six stay as the baseline put them, not dismissed
    others = [r for r in records if r is not confirmed]
    assert len(others) == 6 and all((r.risk_level, r.decided_by) == ("low", "rules") for r in others)


def test_a_rule_hit_is_never_lowered(tmp_path):
    write_logs(tmp_path / "logs")
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    run(store, reviewer(), tmp_path / "logs" / "auth.log", llm_policy="signals")
    brute = [r for r in store.query_records(RecordFilter(), limit=100) if r.category == "brute_force"]
    assert brute and all(r.risk_level in ("high", "critical") for r in brute)  # "nothing abnormal" lowered nothing


def test_the_budget_leaves_prompts_awaiting_review_and_review_pending_answers_them_once(site, tmp_path):
    store, today = site
    metrics = run(store, reviewer(), today, window_max_lines=10, max_batch=1, llm_budget="1tok")
    assert metrics.llm_calls == 1 and metrics.reviews_pending == 3  # one batch, then the budget was spent
    pending = store.query_records(RecordFilter(pending=True), limit=100)
    assert len(pending) == 6 and all(r.risk_level == "low" and r.decided_by == "rules" for r in pending)  # 2 a window
    windows = store.list_windows(source=str(today / "access.log"))
    assert sum(w.line_count for w in windows) == 40  # every line stored at ingestion, budget or not

    engine = reviewer()
    db = str(store.engine.url)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(backends, "open_engine", lambda _options: engine)
        result = CliRunner().invoke(main, ["review", "--pending", "--db", db, "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["reviewed"] == 3 and sum(map(len, review_calls(engine))) == 3
        again = CliRunner().invoke(main, ["review", "--pending", "--db", db, "--json"])
    assert json.loads(again.stdout)["reviewed"] == 0 and sum(map(len, review_calls(engine))) == 3  # nothing twice
    assert store.query_records(RecordFilter(pending=True), limit=100) == []
    assert all(r.verdict.get("verdict") == "benign" for r in deviation_records(store))
    ids = [r.id for r in store.query_records(RecordFilter(), limit=1000)]
    assert len(ids) == len(set(ids))


def test_review_pending_says_how_many_wait_before_it_loads_the_model_and_reviews_them(site, monkeypatch):
    store, today = site
    run(store, reviewer(), today, window_max_lines=10, max_batch=1, llm_budget="1tok")
    engine, told = reviewer(), []
    monkeypatch.setattr(backends, "open_engine", lambda _options: told.append("loaded") or engine)
    done = review_pending(store, backends.EngineOptions(max_batch=1), Settings(), llm_budget="unlimited",
                          on_loading=told.append)
    assert told == [3, "loaded"] and (done.waiting, done.reviewed, done.left) == (3, 3, 0)
    assert done.metrics is not None and done.metrics.llm_calls == sum(map(len, review_calls(engine))) == 3


def test_review_pending_loads_no_model_when_nothing_waits(tmp_path, monkeypatch):
    opened = []
    monkeypatch.setattr(backends, "open_engine", opened.append)
    done = review_pending(open_store(f"sqlite:///{tmp_path / 'empty.db'}"), backends.EngineOptions(), Settings(),
                          on_loading=opened.append)
    assert (done.waiting, done.left, done.metrics, opened) == (0, 0, None, [])


def test_a_kill_during_the_review_loses_no_ingested_line_and_a_resume_finishes_it(site):
    store, today = site
    with pytest.raises(Crash):
        run(store, reviewer(crash_on_call=1), today, window_max_lines=10, max_batch=1)
    assert sum(w.line_count for w in store.list_windows(source=str(today / "access.log"))) == 40
    assert store.count_reviews() == 3  # the first answer was committed, the rest waits
    run(store, reviewer(), today, window_max_lines=10, max_batch=1, resume=True)
    assert store.count_reviews() == 0
    assert sum(w.line_count for w in store.list_windows(source=str(today / "access.log"))) == 40


def test_budget_specs():
    assert Budget.parse("90s").seconds == 90 and Budget.parse("5m").seconds == 300
    assert Budget.parse("1h").seconds == 3600 and Budget.parse("20000tok").tokens == 20000
    assert Budget.parse("unlimited").unlimited and Budget.parse("45").seconds == 45
    from logwarden.errors import InputError

    with pytest.raises(InputError, match="duration"):
        Budget.parse("soon")


def test_records_explain_streams_the_models_narrative(site, monkeypatch):
    store, today = site
    run(store, None, today, rules_only=True)
    [record, *_] = deviation_records(store)
    answer = ('{"findings":[{"evidence":["L1"],"anomaly":"Unknown parameter on item.php",'
              '"category":"web_attack","techniques":["T1190"],"risk_level":"low"}],"recommendation":"Watch it."}')
    monkeypatch.setattr(backends, "open_engine", lambda _options: reviewer(lambda _request: answer))
    result = CliRunner().invoke(main, ["records", "explain", record.id, "--db", str(store.engine.url)])
    assert result.exit_code == 0, result.output
    assert answer in result.stdout.replace("\n", "")


def test_a_deviation_a_rule_already_explains_is_not_asked(site):
    """A request a rule names (SQL injection) needs no judgement of its renamed parameter too: its
    window, with no other deviation, never reaches the model; its records are stored all the same."""
    store, today = site
    log = today / "access.log"
    lines = log.read_text().splitlines()
    lines[35] = access("198.51.100.99", "/shop/item.php?id=3&qty=1&sort=1%27%20OR%201%3D1--")
    log.write_text("\n".join(lines) + "\n")
    engine = reviewer()
    metrics = run(store, engine, today, window_max_lines=10, max_batch=1)
    assert not any("sort=" in prompt for call in review_calls(engine) for prompt in call)
    assert metrics.prompts_queued == 3 and metrics.windows_skipped_by_policy == 1
    assert any(r.risk_level == "high" for r in store.query_records(RecordFilter(), limit=1000))
