"""Web profiles on built requests: what deviates (a renamed parameter, a long value, an unseen
endpoint, an enumeration break, a new metacharacter, a missing parameter), what does not (normal
variety), warm-up, the one-client flood, pending promotion, and hostile requests that stay bounded.
Requests go through the real access-log parser, windows and the `Baseline` judge."""

from __future__ import annotations

import random
import time

import pytest

from logwarden.app.baseline import Baseline
from logwarden.app.baseline.values import attack_syntax, decoded
from logwarden.app.baseline.web import ENDPOINT_WARMUP, PROMOTE, endpoint_key, requests_of
from logwarden.app.events import LogLine
from logwarden.app.mine import SourceMiner, windows
from logwarden.app.parse import parse_lines

STAMP = "10/Mar/2024:06:55:46 +0000"
FIRST = ["ana", "luis", "marta", "jorge", "elena", "pablo", "sara", "diego", "lucia", "raul"]


def line(ip: str, target: str, method: str = "GET", status: int = 200) -> str:
    return f'{ip} - - [{STAMP}] "{method} {target} HTTP/1.1" {status} 512 "-" "Mozilla/5.0"'


def normal_target(rng: random.Random) -> str:
    """A shop's item page: an id, a quantity, a name, a sort order from a fixed set."""
    name = rng.choice(FIRST) + rng.choice(["", "+" + rng.choice(FIRST)])
    return (f"/shop/item.php?id={rng.randint(1, 500)}&qty={rng.randint(1, 9)}&name={name}"
            f"&sort={rng.choice(['price', 'name', 'date'])}")


def judge(baseline: Baseline, lines: list[str], source: str = "access.log"):
    events = parse_lines([LogLine(source, 0, 0, i, t) for i, t in enumerate(lines, 1)], "access")
    miner = SourceMiner()
    return [d for w in windows(events, miner, source=source, inode=0, fmt="access") for d in baseline.observe(w, miner)]


@pytest.fixture
def trained():
    """A baseline that has seen 300 normal requests from 150 clients."""
    rng = random.Random(1)
    baseline = Baseline(None, mode="judge")
    assert judge(baseline, [line(f"10.{i % 150 // 100}.{i % 100}.1", normal_target(rng)) for i in range(300)]) == []
    return baseline


def kinds(deviations) -> set[tuple[str, str]]:
    return {(d.kind, d.ref.split("|")[3]) for d in deviations}


def test_normal_variety_is_not_a_deviation(trained):
    rng = random.Random(2)
    assert judge(trained, [line(f"10.9.{i}.1", normal_target(rng)) for i in range(50)]) == []


def test_a_renamed_parameter_is_named_with_the_usual_ones(trained):
    [deviation] = judge(trained, [line("203.0.113.5", "/shop/item.php?id=3&qtyA=1&name=ana&sort=price&qty=2")])
    assert deviation.kind == "web-param" and deviation.rule_id == "lw-baseline-web-param"
    assert "'qtyA' never seen on GET /shop/item.php" in deviation.text and "usual names:" in deviation.text
    assert "clients" in deviation.text and deviation.level == "low" and deviation.category == "web_attack"


def test_a_missing_parameter_and_a_renamed_one_agree_only_as_structure(trained):
    found = judge(trained, [line("203.0.113.5", "/shop/item.php?id=3&qtyA=1&name=ana&sort=price")])
    assert kinds(found) == {("web-param", "name"), ("web-param", "missing")}
    assert {d.level for d in found} == {"low"}  # one family: a rename


def test_a_long_value_deviates_by_its_length(trained):
    found = judge(trained, [line("203.0.113.5", "/shop/item.php?id=3&qty=1&name=" + "a" * 300 + "&sort=price")])
    assert kinds(found) == {("web-value", "length")}
    assert "300 bytes long" in found[0].text


def test_an_enumeration_break_and_a_number_out_of_range(trained):
    found = judge(trained, [line("203.0.113.5", "/shop/item.php?id=90000&qty=1&name=ana&sort=ssn")])
    assert {("web-value", "enum"), ("web-value", "range")} <= kinds(found)
    assert any("not one of its 3 usual values" in d.text for d in found)


def test_an_unseen_endpoint_is_a_deviation_until_enough_clients_ask_for_it(trained):
    [first] = judge(trained, [line("203.0.113.5", "/shop/backup.php.bak")])
    assert first.kind == "web-endpoint" and "never served" in first.text
    found = judge(trained, [line(f"198.51.{i}.100", "/shop/new-page.php") for i in range(PROMOTE + 5)])
    assert len(found) == PROMOTE - 1  # the PROMOTE-th client makes it a page of the site
    assert judge(trained, [line("198.51.100.200", "/shop/new-page.php")]) == []


def test_metacharacters_with_attack_syntax_raise_the_level(trained):
    found = judge(trained, [line("203.0.113.5", "/shop/item.php?id=3&qty=1&name=ana%27+or+1%3D1--&sort=price")])
    assert ("web-value", "class") in kinds(found)
    assert {d.level for d in found} == {"medium"}


def test_independent_deviations_agree_at_medium(trained):
    found = judge(trained, [line("203.0.113.5", "/shop/item.php?id=3&qty=1&nameX=ana&name=" + "b" * 400
                                 + "&sort=price")])
    assert {d.family for d in found} == {"structure", "value"} and {d.level for d in found} == {"medium"}


def test_nothing_is_judged_during_warm_up():
    baseline = Baseline(None, mode="judge")
    rng = random.Random(3)
    early = [line(f"10.0.{i}.1", normal_target(rng)) for i in range(ENDPOINT_WARMUP - 1)]
    early.append(line("10.0.99.1", "/shop/item.php?id=1&qtyA=1&name=" + "x" * 900))
    assert judge(baseline, early) == []


def test_one_client_flooding_a_renamed_parameter_does_not_make_it_normal(trained):
    flood = [line("203.0.113.66", "/shop/item.php?id=3&qty=1&name=ana&sort=price&debug=1") for _ in range(2000)]
    assert len(judge(trained, flood)) == 2000
    [later] = judge(trained, [line("203.0.113.67", "/shop/item.php?id=4&qty=2&name=ana&sort=price&debug=1")])
    assert later.ref.endswith("|name|debug")


def test_a_parameter_many_clients_use_is_learned(trained):
    new = [line(f"198.51.{i}.100", f"/shop/item.php?id={i}&qty=1&name=ana&sort=price&lang=es") for i in range(60)]
    assert len(judge(trained, new)) == PROMOTE - 1  # the PROMOTE-th client makes it a parameter of the page
    assert judge(trained, [line("198.51.100.250", "/shop/item.php?id=7&qty=1&name=ana&sort=price&lang=es")]) == []


def test_hostile_requests_are_bounded(trained):
    huge_value = "/shop/item.php?id=3&qty=1&name=" + "A" * 100_000 + "&sort=price"
    many = "/shop/item.php?" + "&".join(f"p{i}={i}" for i in range(10_000))
    broken = "/shop/item.php?id=%zz%&qty=%&name=%E9%ZZ%%&sort=price"
    began = time.perf_counter()
    found = judge(trained, [line("203.0.113.9", t) for t in (huge_value, many, broken)])
    assert time.perf_counter() - began < 30  # a hang guard, not a speed bound
    assert ("web-value", "length") in kinds(found)
    assert ("web-param", "too-many") in kinds(found)
    assert any(d.ref.endswith("|name|p300") or d.kind == "web-param" for d in found)


def test_endpoint_keys_mask_ids_hashes_and_uuids():
    assert endpoint_key("get", "/u/12345/files/3f2a9c1e7b6d4a59/x?y=1") == "GET /u/{n}/files/{hex}/x"
    assert endpoint_key("POST", "/api/v1/items/123e4567-e89b-12d3-a456-426614174000") == "POST /api/v1/items/{uuid}"
    assert endpoint_key("GET", "/tienda1/publico/anadir.jsp") == "GET /tienda1/publico/anadir.jsp"


def test_raw_request_dumps_are_assembled_with_their_cookie_and_body():
    text = ["POST http://shop.example:8080/login.jsp HTTP/1.1", "User-Agent: Mozilla/5.0", "Host: shop.example:8080",
            "Cookie: JSESSIONID=ABC123", "Content-Type: application/x-www-form-urlencoded", "Content-Length: 20", "",
            "user=ana&pwd=secret1", "", "GET http://shop.example:8080/index.jsp?lang=es HTTP/1.1",
            "Cookie: JSESSIONID=DEF456", ""]
    events = parse_lines([LogLine("dump.txt", 0, 0, i, t) for i, t in enumerate(text, 1)], "http_request")
    first, second = requests_of(events, "http_request")
    assert (first.site, first.endpoint, first.client) == ("shop.example:8080", "POST /login.jsp", "session:ABC123")
    assert [(n, v.raw) for n, v in first.params] == [("user", "ana"), ("pwd", "secret1")] and first.lines == [1, 8]
    assert (second.endpoint, second.client, [(n, v.raw) for n, v in second.params]) == ("GET /index.jsp", "session:DEF456", [("lang", "es")])


@pytest.mark.parametrize("value, attack", [
    ("ana%27+or+1%3D1--", True), ("%3Cscript%3Ealert(1)%3C/script%3E", True), ("..%2F..%2Fetc%2Fpasswd", True),
    ("1%3B+cat+/etc/shadow", True), ("%253Cscript%253E", True), ("O%27Brien", False), ("Calle+Mayor%2C+5", False),
    ("a%40b.com", False)])
def test_attack_syntax(value, attack):
    assert attack_syntax(decoded(value)) is attack
