"""OpenAIEngine against scripted stub servers on real loopback sockets: request shape, order,
bounded concurrency, structured-output dialect fallback, retries (Retry-After), time-outs,
spreading, circuit breakers, rate limit, streaming; plus the pure resilience pieces.
The real-server proof is tests/engine/test_openai_backend_real.py."""

from __future__ import annotations

import json
import random
import threading
import time
from email.utils import formatdate

import pytest
from _server_helpers import Reply, StubServer, free_port

from logwarden.engine.api import Request, Sampling, approx_tokens
from logwarden.engine.openai_backend import OpenAIEngine
from logwarden.engine.openai_resilience import CircuitBreaker, EndpointPool, backoff_delay, parse_retry_after
from logwarden.errors import ConfigError
from logwarden.schemas import assessment_json_schema

SCHEMA = assessment_json_schema()
FAST = {"backoff_base_s": 0.01, "backoff_cap_s": 0.05}
NEW_TOKENS = 64  # what each call asks for (the fake servers answer what they answer)


def engine_for(*urls: str, **kw) -> OpenAIEngine:
    options = {"model": "qwen-test", "timeout_s": 10.0, **FAST, **kw}
    return OpenAIEngine(list(urls), **options)


def echo_user(body: dict, n: int) -> Reply:
    """Answers with the user message, in two pieces."""
    user = body["messages"][1]["content"]
    return Reply(pieces=(user[:3], user[3:]))


def requests_for(*users: str) -> list[Request]:
    return [Request(system="SYSTEM PREFIX", user=u) for u in users]


# ---- request shape, order, concurrency -----------------------------------------------------

def test_body_has_system_then_user_strict_schema_stream_and_usage():
    with StubServer(echo_user) as stub, engine_for(stub.url, api_key="sk-test") as engine:
        [gen] = engine.generate(requests_for("hello"), schema=SCHEMA, max_new_tokens=77,
                                sampling=Sampling(temperature=0.0, seed=7))
    body = stub.received[0].body
    assert body["messages"] == [{"role": "system", "content": "SYSTEM PREFIX"},
                                {"role": "user", "content": "hello"}]
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "LLMAssessment", "schema": SCHEMA, "strict": True}}
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert (body["model"], body["max_tokens"], body["temperature"], body["seed"]) == ("qwen-test", 77, 0.0, 7)
    assert stub.received[0].headers["Authorization"] == "Bearer sk-test"
    assert (gen.text, gen.finished, gen.error) == ("hello", True, None)


def test_without_schema_no_response_format_is_sent():
    with StubServer(echo_user) as stub, engine_for(stub.url) as engine:
        engine.generate(requests_for("x"), max_new_tokens=NEW_TOKENS)
    assert "response_format" not in stub.received[0].body
    assert "guided_json" not in stub.received[0].body


def test_results_come_back_in_request_order_with_bounded_in_flight():
    def slow_echo(body: dict, n: int) -> Reply:
        # the first requests are the slowest, so completion order is not request order
        user = body["messages"][1]["content"]
        return Reply(pieces=(user,), delay_s=0.3 if n < 3 else 0.05)

    users = [f"window-{i}" for i in range(10)]
    with StubServer(slow_echo) as stub, engine_for(stub.url, concurrency=3) as engine:
        generations = engine.generate(requests_for(*users), max_new_tokens=NEW_TOKENS)
    assert [g.text for g in generations] == users
    assert stub.max_in_flight == 3


def test_stats_come_from_usage_and_timing():
    usage = {"prompt_tokens": 321, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 300}}
    with StubServer(lambda b, n: Reply(pieces=("a", "b"), usage=usage)) as stub, engine_for(stub.url) as engine:
        [gen] = engine.generate(requests_for("x"), max_new_tokens=NEW_TOKENS)
    stats = gen.stats
    assert (stats.prompt_tokens, stats.cached_prefix_tokens, stats.new_tokens) == (321, 300, 5)
    assert 0 < stats.ttft_s <= stats.total_s
    assert stats.tokens_per_s == pytest.approx(5 / stats.total_s)
    assert stats.device == stub.url and stats.model == "qwen-test"


def test_length_cut_answer_is_not_finished():
    with StubServer(lambda b, n: Reply(pieces=("{",), finish_reason="length")) as stub, \
            engine_for(stub.url) as engine:
        [gen] = engine.generate(requests_for("x"), max_new_tokens=NEW_TOKENS)
    assert gen.finished is False and gen.error is None and gen.text == "{"


# ---- structured-output dialects -------------------------------------------------------------

def rejects(*dialects: str, status: int = 400):
    def script(body: dict, n: int) -> Reply:
        kind = ("guided_json" if "guided_json" in body else body.get("response_format", {}).get("type"))
        if kind in dialects:
            return Reply(status=status, error=f"unsupported {kind}")
        return Reply(pieces=(kind or "none",))
    return script


def dialects_sent(stub: StubServer) -> list[str]:
    return [("guided_json" if "guided_json" in r.body else r.body["response_format"]["type"])
            for r in stub.received]


def test_falls_back_to_json_object_and_remembers_it():
    with StubServer(rejects("json_schema")) as stub, engine_for(stub.url) as engine:
        first = engine.generate(requests_for("a"), schema=SCHEMA, max_new_tokens=NEW_TOKENS)
        second = engine.generate(requests_for("b", "c"), schema=SCHEMA, max_new_tokens=NEW_TOKENS)
        described = engine.describe()["endpoints"][0]
    assert [g.text for g in first + second] == ["json_object"] * 3
    assert dialects_sent(stub) == ["json_schema", "json_object", "json_object", "json_object"]
    assert stub.received[1].body["response_format"]["schema"] == SCHEMA
    assert described["response_format"] == "json_object" and described["response_format_confirmed"]


def test_llama_cpp_python_style_500_on_both_falls_back_to_guided_json():
    with StubServer(rejects("json_schema", "json_object", status=500)) as stub, \
            engine_for(stub.url, concurrency=4) as engine:
        generations = engine.generate(requests_for("a", "b", "c", "d"), schema=SCHEMA, max_new_tokens=NEW_TOKENS)
    assert all(g.text == "guided_json" and g.error is None for g in generations)
    assert stub.received[-1].body["guided_json"] == SCHEMA
    assert "response_format" not in stub.received[-1].body


def test_server_refusing_every_dialect_gives_an_error_not_an_exception():
    with StubServer(rejects("json_schema", "json_object", "guided_json")) as stub, \
            engine_for(stub.url) as engine:
        [gen] = engine.generate(requests_for("a"), schema=SCHEMA, max_new_tokens=NEW_TOKENS)
    assert gen.text == "" and "refused every structured-output dialect" in gen.error
    assert len(stub.received) == 3  # one try per dialect, no blind retries of a 400


def test_fixed_response_format_is_not_probed():
    with StubServer(rejects("json_schema")) as stub, engine_for(stub.url, response_format="json_schema",
                                                                max_retries=3) as engine:
        [gen] = engine.generate(requests_for("a"), schema=SCHEMA, max_new_tokens=NEW_TOKENS)
    assert gen.error and len(stub.received) == 1


# ---- retries, time-outs -------------------------------------------------------------------

def fail_first(k: int, failure: Reply):
    return lambda body, n: failure if n < k else Reply(pieces=("ok",))


@pytest.mark.parametrize("failure", [
    Reply(status=500), Reply(status=503), Reply(status=429), Reply(drop=True),
    Reply(pieces=("partial", "never", "ends"), cut_after=1),
], ids=["500", "503", "429", "dropped-connection", "stream-cut"])
def test_transient_failures_are_retried(failure: Reply):
    with StubServer(fail_first(2, failure)) as stub, engine_for(stub.url, max_retries=2) as engine:
        [gen] = engine.generate(requests_for("x"), max_new_tokens=NEW_TOKENS)
    assert (gen.text, gen.error) == ("ok", None)
    assert len(stub.received) == 3


def test_retries_exhausted_gives_error_and_empty_text():
    with StubServer(lambda b, n: Reply(status=502, error="bad gateway")) as stub, \
            engine_for(stub.url, max_retries=2, breaker_threshold=100) as engine:
        [gen] = engine.generate(requests_for("x"), max_new_tokens=NEW_TOKENS)
    assert gen.text == "" and not gen.finished
    assert "bad gateway" in gen.error and "3 attempt" in gen.error
    assert len(stub.received) == 3


def test_client_errors_are_not_retried():
    with StubServer(lambda b, n: Reply(status=404, error="model 'nope' not found")) as stub, \
            engine_for(stub.url, max_retries=3) as engine:
        [gen] = engine.generate(requests_for("x"), max_new_tokens=NEW_TOKENS)
    assert "not found" in gen.error and len(stub.received) == 1


def test_retry_after_is_honoured():
    script = fail_first(1, Reply(status=429, headers={"Retry-After": "1"}))
    with StubServer(script) as stub, engine_for(stub.url, max_retries=1) as engine:
        [gen] = engine.generate(requests_for("x"), max_new_tokens=NEW_TOKENS)
    assert gen.error is None
    assert stub.received[1].at - stub.received[0].at >= 0.95


def test_per_request_timeout_then_error():
    with StubServer(lambda b, n: Reply(delay_s=1.5)) as stub, \
            engine_for(stub.url, timeout_s=0.3, max_retries=1) as engine:
        [gen] = engine.generate(requests_for("x"), max_new_tokens=NEW_TOKENS)
    assert "timed out" in gen.error and len(stub.received) == 2


# ---- spreading and circuit breakers -----------------------------------------------------------

def test_least_outstanding_sends_more_to_the_faster_server():
    slow_script = lambda b, n: Reply(pieces=("slow",), delay_s=0.6)
    fast_script = lambda b, n: Reply(pieces=("fast",), delay_s=0.02)
    with StubServer(slow_script) as slow, StubServer(fast_script) as fast, \
            engine_for(slow.url, fast.url, concurrency=2) as engine:
        generations = engine.generate(requests_for(*[str(i) for i in range(12)]), max_new_tokens=NEW_TOKENS)
    assert all(g.error is None for g in generations)
    assert len(slow.received) + len(fast.received) == 12
    assert len(fast.received) > 2 * len(slow.received)


def test_idle_pool_spreads_over_every_url():
    with StubServer(echo_user) as a, StubServer(echo_user) as b, engine_for(a.url, b.url, concurrency=1) as engine:
        engine.generate(requests_for(*"abcdef"), max_new_tokens=NEW_TOKENS)
    assert len(a.received) == len(b.received) == 3


def test_dead_url_is_cut_off_by_its_breaker_and_nothing_is_lost():
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there: connection refused
    with StubServer(echo_user) as live, engine_for(dead, live.url, concurrency=4, max_retries=4,
                                                  breaker_threshold=2, breaker_cooldown_s=60) as engine:
        users = [f"w{i}" for i in range(12)]
        generations = engine.generate(requests_for(*users), max_new_tokens=NEW_TOKENS)
        dead_state = engine.describe()["endpoints"][0]
    assert [g.text for g in generations] == users
    assert dead_state["breaker"] == "open"
    assert dead_state["failed"] == 2  # the breaker stopped traffic after the threshold


def test_every_url_down_returns_errors_for_every_request_in_order():
    urls = [f"http://127.0.0.1:{free_port()}/v1" for _ in range(2)]
    with engine_for(*urls, max_retries=2, breaker_threshold=2, breaker_cooldown_s=60) as engine:
        generations = engine.generate(requests_for(*[str(i) for i in range(6)]), max_new_tokens=NEW_TOKENS)
    assert len(generations) == 6
    assert all(g.text == "" and g.error and not g.finished for g in generations)
    assert any("unavailable" in g.error for g in generations)


def test_requests_wait_for_the_half_open_probe_instead_of_failing():
    script = lambda body, n: Reply(drop=True) if n == 0 else Reply(pieces=("ok",), delay_s=0.4)
    with StubServer(script) as stub, engine_for(stub.url, concurrency=4, max_retries=0, breaker_threshold=1,
                                                breaker_cooldown_s=0.2) as engine:
        [crashed] = engine.generate(requests_for("x"), max_new_tokens=NEW_TOKENS)
        assert crashed.error and engine.describe()["endpoints"][0]["breaker"] == "open"
        time.sleep(0.25)  # cool-down over: the next request is the probe
        generations = engine.generate(requests_for("a", "b", "c", "d"), max_new_tokens=NEW_TOKENS)
    assert [g.text for g in generations] == ["ok"] * 4  # none spent its only attempt on "all down"
    assert len(stub.received) == 5


def test_breaker_states_with_a_fake_clock():
    now = [0.0]
    breaker = CircuitBreaker(threshold=3, cooldown_s=10, clock=lambda: now[0])
    for _ in range(2):
        breaker.on_failure()
    assert breaker.state == "closed" and breaker.can_send()
    breaker.on_failure()
    assert breaker.state == "open" and not breaker.can_send()
    now[0] = 10.0
    assert breaker.state == "half_open" and breaker.can_send()
    breaker.on_send()
    assert not breaker.can_send()  # one probe at a time
    breaker.on_failure()
    assert breaker.state == "open"  # a failed probe re-opens at once
    now[0] = 20.0
    breaker.on_send()
    breaker.on_success()
    assert breaker.state == "closed" and breaker.consecutive_failures == 0


def test_pool_picks_least_outstanding_and_skips_open_breakers():
    pool = EndpointPool.build(["a", "b", "c"], threshold=1, cooldown_s=60)
    first, second, third = pool.acquire(), pool.acquire(), pool.acquire()
    assert {first.base_url, second.base_url, third.base_url} == {"a", "b", "c"}
    pool.release(second, ok=True)
    assert pool.acquire() is second  # the only one with nothing outstanding
    pool.release(first, ok=False)  # threshold 1: opens
    pool.release(third, ok=True)
    chosen = [pool.acquire().base_url for _ in range(4)]
    assert "a" not in chosen
    for endpoint in pool.endpoints[1:]:
        endpoint.breaker.on_failure()
    assert pool.acquire() is None


# ---- rate limit ---------------------------------------------------------------------------------

def test_token_bucket_caps_the_request_rate():
    with StubServer(echo_user) as stub, engine_for(stub.url, concurrency=10, max_rps=5) as engine:
        engine.generate(requests_for(*[str(i) for i in range(10)]), max_new_tokens=NEW_TOKENS)
    times = sorted(r.at for r in stub.received)
    # a burst of 5, then 5 more at 5/s: the 10th cannot start before ~1 s after the first
    assert times[-1] - times[0] >= 0.9


# ---- streaming ----------------------------------------------------------------------------------

def test_stream_yields_pieces_then_sets_the_generation():
    pieces = ('{"anomaly":', ' "x"', "}")
    with StubServer(lambda b, n: Reply(pieces=pieces)) as stub, engine_for(stub.url) as engine:
        text_stream = engine.stream(requests_for("x")[0], schema=SCHEMA, max_new_tokens=NEW_TOKENS)
        received = list(text_stream)
    assert tuple(received) == pieces
    assert text_stream.generation.text == "".join(pieces) and text_stream.generation.finished


def test_stream_is_retried_before_the_first_piece_but_not_after():
    script = fail_first(1, Reply(status=503))
    with StubServer(script) as stub, engine_for(stub.url, max_retries=2) as engine:
        text_stream = engine.stream(requests_for("x")[0], max_new_tokens=NEW_TOKENS)
        assert list(text_stream) == ["ok"]
    cut = Reply(pieces=("half", "rest"), cut_after=1)
    with StubServer(lambda b, n: cut) as stub, engine_for(stub.url, max_retries=2) as engine:
        text_stream = engine.stream(requests_for("x")[0], max_new_tokens=NEW_TOKENS)
        assert list(text_stream) == ["half"]
    assert "interrupted after partial output" in text_stream.generation.error
    assert len(stub.received) == 1


def test_sync_facade_works_from_several_threads():
    with StubServer(echo_user) as stub, engine_for(stub.url, concurrency=4) as engine:
        results: dict[int, list[str]] = {}

        def worker(k: int) -> None:
            results[k] = [g.text for g in engine.generate(requests_for(f"t{k}-a", f"t{k}-b"), max_new_tokens=NEW_TOKENS)]

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == {k: [f"t{k}-a", f"t{k}-b"] for k in range(4)}


# ---- small pieces -------------------------------------------------------------------------------

def test_count_tokens_falls_back_to_an_estimate_without_tokenize():
    with StubServer(lambda b, n: Reply(status=404, error="no such route")) as stub, engine_for(stub.url) as engine:
        assert engine.count_tokens("x" * 40) == approx_tokens("x" * 40)
        assert engine.count_tokens("") == 0


def test_backoff_is_jittered_bounded_and_yields_to_retry_after():
    rng = random.Random(1)
    delays = [backoff_delay(a, base_s=0.5, cap_s=4.0, rng=rng) for a in range(10) for _ in range(50)]
    assert all(0.0 <= d <= 4.0 for d in delays)
    assert len({round(d, 6) for d in delays}) > 400  # jitter: not all clients retry together
    assert max(backoff_delay(0, base_s=0.5, rng=rng) for _ in range(100)) <= 0.5
    assert backoff_delay(3, retry_after_s=7.0) == 7.0
    assert backoff_delay(3, cap_s=4.0, retry_after_s=10_000, retry_after_cap_s=60) == 60.0


def test_retry_after_parses_seconds_and_http_dates():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after(formatdate(1_000_030, usegmt=True), now=1_000_000) == pytest.approx(30, abs=1)


@pytest.mark.parametrize("urls, kw, fragment", [
    ([], {}, "at least one --base-url"),
    (["localhost:8000"], {}, "must start with http"),
    (["http://h/v1"], {"model": ""}, "--model is required"),
    (["http://h/v1"], {"concurrency": 0}, "--concurrency"),
    (["http://h/v1"], {"response_format": "yaml"}, "response_format must be one of"),
])
def test_bad_options_raise_config_error_saying_how_to_fix(urls, kw, fragment):
    options = {"model": "m", **kw}
    with pytest.raises(ConfigError, match=fragment):
        OpenAIEngine(urls, **options)


def test_describe_reports_the_endpoints():
    with StubServer(echo_user) as stub, engine_for(stub.url, concurrency=2, max_rps=3.5) as engine:
        engine.generate(requests_for("a"), max_new_tokens=NEW_TOKENS)
        described = engine.describe()
    assert json.loads(json.dumps(described))["backend"] == "openai"
    assert described["max_rps"] == 3.5 and described["endpoints"][0]["succeeded"] == 1
