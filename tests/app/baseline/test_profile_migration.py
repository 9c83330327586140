"""A store written before the profiles had readable keys (fixtures/profiles_v1.json: rows as the
code at 16e247c stored them after learning `traffic_v1.history()` and judging `today()`, and what
that code judged of `later()`) opens with today's code, keeps everything it learned and judges the
same lines the same; a flush writes the rows it touches back in today's keys."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import traffic_v1 as traffic

from logwarden.app.baseline import Baseline
from logwarden.app.baseline.legacy import upgrade
from logwarden.app.baseline.rows import load
from logwarden.app.store import open_store

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "profiles_v1.json").read_text())
_CLIENTS = re.compile(r"\d[\d,]* clients")


def same(deviations: list[dict]) -> list[dict]:
    """Deviations as compared: clients beyond a sketch's k (32 a parameter, 64 an endpoint or site)
    are an estimate from their hashes, and since issue 43 a client is hashed as its network
    (`net:10.1.2.0/24`, not `src_ip:10.1.2.3`), so an estimate may move; everything else must match."""
    return [{**d, "text": _CLIENTS.sub("~ clients", d["text"])} for d in deviations]


def _old_store(tmp_path):
    """A store holding the fixture's rows exactly as they were written (keys, data, clients)."""
    store = open_store(f"sqlite:///{tmp_path / 'v1.db'}")
    by_scope: dict[tuple[str, str], dict] = {}
    for row in FIXTURE["rows"]:
        by_scope.setdefault((row["kind"], row["scope"]), {})[row["key"]] = (row["data"], row["clients"])
    with store.transaction() as tx:
        for (kind, scope), rows in by_scope.items():
            tx.put_baseline(kind, scope, rows)
    return store


def test_the_fixture_is_in_the_old_keys():
    kinds = {row["kind"]: row["data"] for row in FIXTURE["rows"]}
    assert set(kinds) == {"web-site", "web", "template-scope", "template", "host", "entity"}
    assert "n" in kinds["web"] and "pend" in kinds["web-site"] and isinstance(kinds["entity"], list)


def test_an_old_store_judges_the_same_lines_the_same(tmp_path):
    store = _old_store(tmp_path)
    judged = traffic.judged(Baseline(store, mode="judge"), traffic.later())
    assert same(judged) == same(FIXTURE["deviations"])
    assert {d["kind"] for d in judged} == {"web-endpoint", "web-param", "web-value", "template", "entity"}


def test_nothing_learned_is_lost_in_the_upgrade():
    for row in FIXTURE["rows"]:
        profile = load(row["kind"], row["data"])
        assert load(row["kind"], profile.to_json()).to_json() == profile.to_json()
        assert profile.weight() == row["clients"]  # what the old code ranked the row by
    endpoint = next(load("web", r["data"]) for r in FIXTURE["rows"] if r["key"] == "GET /shop/item.php")
    assert set(endpoint.pending) == {"debug"} and endpoint.params["lang"].is_enumeration()
    search = next(load("web", r["data"]) for r in FIXTURE["rows"] if r["key"] == "GET /shop/search.php")
    assert search.accepted == {"page"}
    site = next(load("web-site", r["data"]) for r in FIXTURE["rows"] if r["kind"] == "web-site")
    assert set(site.pending) == {"GET /admin/backup.php"}


def test_a_flush_rewrites_what_it_touched_in_readable_keys(tmp_path):
    store = _old_store(tmp_path)
    baseline = Baseline(store, mode="judge")
    traffic.observe_all(baseline, traffic.later())
    with store.transaction() as tx:
        baseline.flush(tx)
    endpoint = next(r for r in store.iter_baseline(kind="web") if r["key"] == "GET /shop/item.php")
    old = next(r for r in FIXTURE["rows"] if r["key"] == "GET /shop/item.php")
    assert endpoint["data"]["requests"] == old["data"]["n"] + 3  # three of later()'s requests were to it
    assert set(endpoint["data"]["params"]["lang"]) == {"clients", "length", "classes", "enum", "range"}
    host = next(store.iter_baseline(kind="host"))
    assert host["data"]["events"] == FIXTURE["rows"][[r["kind"] for r in FIXTURE["rows"]].index("host")]["data"]["n"] + 2


def test_today_s_rows_learn_what_the_old_ones_did(tmp_path):
    """The same history learned by today's code judges `later()` as the old code's rows did after
    the same two days."""
    store = open_store(f"sqlite:///{tmp_path / 'v2.db'}")
    learner = Baseline(store, mode="learn")
    traffic.observe_all(learner, traffic.history())
    with store.transaction() as tx:
        learner.flush(tx)
    first = Baseline(store, mode="judge")
    traffic.observe_all(first, traffic.today())
    first.accept("web|access.log|GET%20/shop/search.php|name|page")
    with store.transaction() as tx:
        first.flush(tx)
    assert {(r["kind"], r["scope"], r["key"]) for r in store.iter_baseline()} == \
        {(r["kind"], r["scope"], r["key"]) for r in FIXTURE["rows"]}
    assert [r["data"].get("requests") for r in store.iter_baseline()] == \
        [load(r["kind"], r["data"]).to_json().get("requests") for r in FIXTURE["rows"]]
    assert same(traffic.judged(Baseline(store, mode="judge"), traffic.later())) == same(FIXTURE["deviations"])


@pytest.mark.parametrize("kind, data", [("web", [1, 2]), ("entity", {"n": 3}), ("template", [1, 2])])
def test_a_row_that_is_neither_old_nor_new_is_refused(kind, data):
    assert upgrade(kind, data) is data  # not taken for an old row
    with pytest.raises((KeyError, TypeError, ValueError, AttributeError)):
        load(kind, data)
