"""An attacker who writes the logs tries to teach the web baseline that the attack is normal
(issue 43): one client flooding, a botnet of neighbouring IPv4 addresses, the addresses of one
IPv6 /64, one client ramping a value's length a little at a time, and poison learned in one run
to hide the attack in the next. Real access-log parser, windows and the `Baseline` judge."""

from __future__ import annotations

import random

import pytest

from logwarden.app.baseline import Baseline
from logwarden.app.events import LogLine
from logwarden.app.mine import SourceMiner, windows
from logwarden.app.parse import parse_lines
from logwarden.app.store import open_store

STAMP = "10/Mar/2024:06:55:46 +0000"
ATTACK = "/shop/item.php?id=7&sort=price&q=shoe&debug=1"  # a parameter the page never took


def line(ip: str, target: str) -> str:
    return f'{ip} - - [{STAMP}] "GET {target} HTTP/1.1" 200 512 "-" "Mozilla/5.0"'


def judge(baseline: Baseline, lines: list[str]) -> list:
    events = parse_lines([LogLine("access.log", 0, 0, i, t) for i, t in enumerate(lines, 1)], "access")
    miner = SourceMiner()
    return [d for w in windows(events, miner, source="access.log", inode=0, fmt="access")
            for d in baseline.observe(w, miner)]


def normal(rng: random.Random, ip: str) -> str:
    words = ("red", "blue", "shoe", "bag", "hat", "coat")
    query = "+".join(rng.choice(words) for _ in range(rng.randint(1, 3)))
    return line(ip, f"/shop/item.php?id={rng.randint(1, 500)}&sort={rng.choice(('price', 'name'))}&q={query}")


def history(rng: random.Random) -> list[str]:
    """400 ordinary requests from 200 clients, each in its own network."""
    return [normal(rng, f"10.{i % 200 // 100}.{i % 100}.7") for i in range(400)]


@pytest.fixture
def warm():
    baseline = Baseline(None, mode="judge")
    assert judge(baseline, history(random.Random(3))) == []
    return baseline


def flagged(baseline: Baseline, ip: str = "192.0.2.200", target: str = ATTACK) -> set[str]:
    return {d.kind for d in judge(baseline, [line(ip, target)])}


def test_one_client_flooding_a_new_parameter_does_not_make_it_normal(warm):
    judge(warm, [line("198.51.100.9", ATTACK) for _ in range(2000)])
    assert flagged(warm) == {"web-param"}


def test_a_botnet_in_one_ipv4_network_counts_as_one_client(warm):
    poison = [line(f"203.0.113.{i}", target) for i in range(1, 26) for target in (ATTACK, "/shop/admin.php")]
    judge(warm, poison)
    assert flagged(warm) == {"web-param"}
    assert flagged(warm, target="/shop/admin.php") == {"web-endpoint"}


def test_the_addresses_of_one_ipv6_64_count_as_one_client(warm):
    judge(warm, [line(f"2001:db8:1:2::{i:x}", ATTACK) for i in range(1, 26)])
    assert flagged(warm) == {"web-param"}


def test_many_networks_still_make_a_new_parameter_normal(warm):
    """What the site really added is learned: PROMOTE distinct networks asking for it."""
    judge(warm, [line(f"198.{i}.100.1", ATTACK) for i in range(1, 26)])
    assert flagged(warm) == set()


def test_one_client_ramping_a_value_s_length_is_caught_and_teaches_nothing(warm):
    ramp = [line("198.51.100.9", f"/shop/item.php?id=7&sort=price&q={'a' * (19 + i * 3)}") for i in range(1000)]
    found = judge(warm, ramp)
    assert any(d.extra.get("param") == "q" for d in found)  # the ramp itself deviates (before: 0 records)
    assert "web-value" in flagged(warm, target=f"/shop/item.php?id=7&sort=price&q={'a' * 3000}")


def test_poison_learned_in_one_run_does_not_hide_the_attack_in_the_next(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    first = Baseline(store, mode="judge")
    judge(first, history(random.Random(4)))
    judge(first, [line(f"2001:db8:1:2::{i:x}", ATTACK) for i in range(1, 26)])  # run 1: the poison
    ramp = [line("198.51.100.9", f"/shop/item.php?id=7&sort=price&q={'a' * (19 + i * 3)}") for i in range(1000)]
    judge(first, ramp)
    with store.transaction() as tx:
        first.flush(tx)
    second = Baseline(store, mode="judge")  # run 2 on the same store: the attack
    assert flagged(second) == {"web-param"}
    assert "web-value" in flagged(second, target=f"/shop/item.php?id=7&sort=price&q={'a' * 3000}")
