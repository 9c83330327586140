"""Deterministic grouping (app/incidents/grouping.py): pivots within gaps join records, busy pivots
do not glue unrelated stories, and the same records always give the same groups."""

from __future__ import annotations

import random
from datetime import timedelta

from _store_helpers import BASE_TS, make_record

from logwarden.app.incidents import GroupingPolicy, group_records
from logwarden.app.incidents.pivots import pivots_of
from logwarden.schemas import Evidence, ExemplarLine, Indicators

POLICY = GroupingPolicy(gap_s=3600, weak_gap_s=900, max_fanout=5, max_pivot_hosts=2)


def rec(line: int, minutes: float, *, host: str | None, ips=(), users=(), source="/var/log/auth.log", text=""):
    start = BASE_TS + timedelta(minutes=minutes)
    evidence = Evidence(line_numbers=[line], exemplars=[ExemplarLine(line_no=line, text=text or f"line {line}")])
    return make_record(source=source, line_start=line, line_end=line, host=host, first_ts=start,
                       last_ts=start + timedelta(seconds=30),
                       indicators=Indicators(ips=list(ips), users=list(users), hosts=[]), evidence=evidence)


def sets(groups):
    return sorted(sorted(g.record_ids) for g in groups)


def test_a_shared_address_joins_records_of_two_files_and_two_hosts():
    web = rec(1, 0, host=None, ips=["203.0.113.7"], source="/var/log/apache2/access.log")
    ssh = rec(2, 40, host="db01", ips=["203.0.113.7"], source="/var/log/secure")
    other = rec(3, 41, host="web02", ips=["198.51.100.9"])
    groups = group_records([web, ssh, other], POLICY)
    assert sets(groups) == sorted([sorted([web.id, ssh.id]), [other.id]])
    joined = next(g for g in groups if web.id in g.record_ids)
    assert joined.pivots == {"ip=203.0.113.7"} and joined.record_ids == [web.id, ssh.id]  # time order


def test_a_host_bridges_only_the_short_gap_an_address_the_long_one():
    a, b = rec(1, 0, host="web01"), rec(2, 20, host="web01")  # 20 min > 15 min weak gap
    c, d = rec(3, 100, host="x1", ips=["192.0.2.5"]), rec(4, 150, host="x2", ips=["192.0.2.5"])  # 50 min < 1 h
    assert sets(group_records([a, b, c, d], POLICY)) == sorted([[a.id], [b.id], sorted([c.id, d.id])])


def test_chains_link_across_many_windows_of_one_story():
    chain = [rec(i, 10 * i, host="ws1", users=["CORP\\jdoe"]) for i in range(1, 5)]  # 10 min apart, one user
    groups = group_records(chain, POLICY)
    assert len(groups) == 1 and "user=jdoe" in groups[0].pivots


def test_a_busy_pivot_glues_nothing_but_rare_pivots_still_link():
    """A proxy address shared by more records than the fan-out cap links none of them; two records of
    one story that also share a rare account stay together."""
    proxy = "10.0.0.1"
    noise = [rec(i, i, host=f"h{i}", ips=[proxy]) for i in range(1, 8)]  # 7 records > cap 5
    story = [rec(20, 3, host="h20", ips=[proxy], users=["mallory"]), rec(21, 5, host="h21", ips=[proxy],
                                                                          users=["mallory"])]
    groups = group_records(noise + story, POLICY)
    assert sorted(story_ids := [r.id for r in story]) in sets(groups)
    assert all(len(g.record_ids) == 1 for g in groups if set(g.record_ids) - set(story_ids))
    assert any(f"ip={proxy}" in g.busy for g in groups)


def test_a_value_on_more_hosts_than_allowed_is_busy_but_a_host_is_never_busy_for_its_spread():
    spread = [rec(i, i, host=f"srv{i}", users=["svc-backup"]) for i in range(1, 4)]  # 3 hosts > 2
    assert all(len(g.record_ids) == 1 for g in group_records(spread, POLICY))


def test_built_in_accounts_loopback_and_the_system_logon_are_no_pivots():
    text = '{"EventID":4624,"TargetLogonId":"0x3e7","SubjectLogonId":"0xc61d9","ProcessGuid":"{39e4a257-8244-5f92-c117-000000000700}"}'
    record = rec(1, 0, host="WS-1.corp.example.com", ips=["127.0.0.1", "203.0.113.4"],
                 users=["NT AUTHORITY\\SYSTEM", "WS-1$", "CORP\\Alice"], text=text)
    assert pivots_of(record) == {("host", "ws-1"), ("ip", "203.0.113.4"), ("user", "alice"),
                                 ("logon", "0xc61d9"), ("process", "39e4a257-8244-5f92-c117-000000000700")}


def test_the_same_records_in_any_order_give_the_same_groups():
    records = [rec(i, 7 * i, host=f"h{i % 3}", ips=[f"192.0.2.{i % 4}"]) for i in range(1, 30)]
    first = group_records(records, POLICY)
    shuffled = records[:]
    random.Random(4).shuffle(shuffled)
    again = group_records(shuffled, POLICY)
    assert [g.record_ids for g in first] == [g.record_ids for g in again]


def test_records_without_a_time_stay_alone():
    timeless = make_record(line_start=7, line_end=7, first_ts=None, last_ts=None)
    timed = rec(1, 0, host="bastion-1", ips=["203.0.113.7"])
    assert sets(group_records([timeless, timed], POLICY)) == sorted([[timeless.id], [timed.id]])


def test_a_busy_host_such_as_a_domain_controller_links_nothing_its_attackers_still_do():
    """45 records on one DC within minutes of each other (more than the cap of 5 here), from attackers
    two records each: the host is busy, so each attacker's pair is its own incident."""
    records = [rec(i + 1, i, host="dc01.corp.example.com", ips=[f"198.51.100.{i // 2}"]) for i in range(45)]
    groups = group_records(records, POLICY)
    assert sorted(len(g.record_ids) for g in groups) == [1] + [2] * 22
    assert all("host=dc01" in g.busy and "host=dc01" not in g.pivots for g in groups)
