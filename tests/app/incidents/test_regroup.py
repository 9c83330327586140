"""Grouping on a real store: across windows, files and two hosts writing one PostgreSQL database,
idempotent re-runs, the watcher extending an open incident, reviews kept when an incident grows."""

from __future__ import annotations

from pathlib import Path

from _incident_helpers import ATTACKER, OTHER, burst, write
from _watch_helpers import watcher
from click.testing import CliRunner

from logwarden.app.incidents import IncidentOptions
from logwarden.app.incidents.regroup import REVIEW_FIELDS, regroup
from logwarden.app.store import IncidentFilter, open_store
from logwarden.cli.main import main as cli


def analyze(folder: Path, node: str, db: str) -> None:
    result = CliRunner().invoke(cli, ["analyze", str(folder), "--rules-only", "--node", node, "--year", "2026",
                                      "--db", db])
    assert result.exit_code == 0, result.output


def test_one_story_across_windows_files_and_two_hosts_of_one_postgresql_store(tmp_path, pg_url):
    """web01 (host A) sees two bursts 20 minutes apart (two windows), db01 (host B) a third burst
    from the same address, each analysed by its own run; a later, unrelated attacker on db01 is one
    medium record linked to nothing: an alert, in no incident."""
    write(tmp_path / "a" / "auth.log", burst("web01", 10, 0, ATTACKER) + burst("web01", 10, 20, ATTACKER,
                                                                              pid=2000, accepted=True))
    write(tmp_path / "b" / "secure", burst("db01", 10, 40, ATTACKER, pid=3000) + burst("db01", 12, 30, OTHER,
                                                                                         pid=4000))
    analyze(tmp_path / "a", "hostA", pg_url)
    analyze(tmp_path / "b", "hostB", pg_url)
    with open_store(pg_url) as store:
        found = store.incidents.query()
        story = next(i for i in found if len(i.record_ids) > 1)
        members = store.incidents.members(story.id)
        assert len(found) == 1 and f"ip={ATTACKER}" in story.pivots
        assert {r.host for r in members} == {"web01", "db01"}
        assert {r.source.split(":")[0] for r in members} == {"hostA", "hostB"}
        assert len({(r.source, r.line_start) for r in members if r.host == "web01"}) >= 2  # two windows
        [alone] = [r for r in store.query_records(limit=100) if r.indicators.ips == [OTHER]]
        assert store.incidents.of_records([alone.id]) == {} and alone.risk_level == "medium"
        assert story.risk_level == "high" and story.hosts == ["web01", "db01"]
        assert [i.id for i in store.incidents.query(IncidentFilter(host="WEB0"))] == [story.id]
        assert [i.id for i in store.incidents.query(IncidentFilter(min_risk="high"))] == [story.id]
        assert store.incidents.get(story.id[4:12]).id == story.id  # a prefix without inc-


def test_regrouping_again_changes_nothing(tmp_path, any_db_url):
    write(tmp_path / "logs" / "auth.log", burst("web01", 10, 0, ATTACKER) + burst("web01", 10, 20, ATTACKER, pid=2000)
          + burst("web01", 11, 30, OTHER, pid=3000) + burst("web01", 11, 50, OTHER, pid=4000))
    analyze(tmp_path / "logs", "n1", any_db_url)
    with open_store(any_db_url) as store:
        before = store.incidents.query()
        assert len(before) == 2  # a chain of two bursts per address
        store.incidents.review(before[0].id, status="acknowledged", owner="ana", note="seen")
        again = regroup(store, IncidentOptions())
        after = store.incidents.query()
    assert sorted(i.id for i in again.incidents) == sorted(i.id for i in before) and not again.removed
    assert [i.model_dump(exclude=set(REVIEW_FIELDS)) for i in after] == \
        [i.model_dump(exclude=set(REVIEW_FIELDS)) for i in before]
    assert next(i for i in after if i.id == before[0].id).status == "acknowledged"
    analyze(tmp_path / "logs", "n1", any_db_url)  # the same lines again: upserted records, the same incidents
    with open_store(any_db_url) as store:
        assert sorted(i.id for i in store.incidents.query()) == sorted(i.id for i in before)


def test_the_watcher_extends_an_open_incident_and_keeps_its_review(tmp_path):
    folder = tmp_path / "logs"
    log = write(folder / "auth.log", burst("web01", 10, 0, ATTACKER) + burst("web01", 10, 20, ATTACKER, pid=2000))
    with open_store(f"sqlite:///{tmp_path / 'lw.db'}") as store:
        follow = watcher(store, folder, from_start=True)
        follow.poll(final=True)
        [opened] = store.incidents.query()
        store.incidents.review(opened.id, status="closed", reason="duplicate", note="ongoing")
        write(log, burst("web01", 10, 40, ATTACKER, pid=5000, accepted=True), mode="a")
        follow.poll(final=True)
        [extended] = store.incidents.query()
        follow.pipeline.finish("stopped")
    assert extended.id == opened.id and len(extended.record_ids) > len(opened.record_ids)
    assert set(opened.record_ids) < set(extended.record_ids)
    assert (extended.status, extended.close_reason) == ("closed", "duplicate") and extended.analyst_note == "ongoing"
    assert extended.risk_level == "high" and opened.risk_level == "medium"


def test_records_below_the_minimum_level_make_no_incident(tmp_path):
    write(tmp_path / "logs" / "auth.log", burst("web01", 10, 0, ATTACKER))
    analyze(tmp_path / "logs", "n1", f"sqlite:///{tmp_path / 'lw.db'}")
    with open_store(f"sqlite:///{tmp_path / 'lw.db'}") as store:
        assert regroup(store, IncidentOptions(min_risk="high")).incidents == []
        assert store.incidents.query() == []


def test_regroupings_of_several_processes_on_one_postgresql_store_do_not_collide(tmp_path, pg_url):
    """Watchers on several hosts regroup the same incidents at once: one at a time (an advisory
    lock), so none fails on another's rows and the result is what one regrouping gives."""
    import threading

    write(tmp_path / "a" / "auth.log", burst("web01", 10, 0, ATTACKER) + burst("web01", 10, 20, ATTACKER, pid=2000))
    write(tmp_path / "b" / "secure", burst("db01", 10, 40, ATTACKER, pid=3000))
    analyze(tmp_path / "a", "hostA", pg_url)
    analyze(tmp_path / "b", "hostB", pg_url)
    failures = []

    def regroup_often():
        try:
            with open_store(pg_url) as store:
                for _ in range(15):
                    regroup(store, IncidentOptions())
        except Exception as exc:  # noqa: BLE001 - collected and asserted on below
            failures.append(exc)

    threads = [threading.Thread(target=regroup_often) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    with open_store(pg_url) as store:
        [incident] = store.incidents.query()
        assert len(incident.record_ids) == len(store.query_records(limit=100))
        assert len(store.incidents.of_records(incident.record_ids)) == len(incident.record_ids)


def test_an_untimed_record_stored_twice_in_one_run_is_one_member(tmp_path):
    """The review stores a record again (its level refined); the run's span holds it once, the later copy."""
    from _store_helpers import make_record

    from logwarden.app.incidents.regroup import Span

    first = make_record(line_start=1, line_end=2, host="web01", risk_level="medium")
    first = first.model_copy(update={"first_ts": None, "last_ts": None})
    again = first.model_copy(update={"risk_level": "high"})
    with open_store(f"sqlite:///{tmp_path / 'lw.db'}") as store:
        store.upsert_records([again])
        span = Span()
        span.add([first])
        span.add([again])
        assert list(span.untimed.values()) == [again]
        regrouped = regroup(store, IncidentOptions(), around=span)
        assert regrouped.incidents == []  # alone: a candidate its story would make an incident
        assert [i.record_ids for i in regrouped.candidates] == [[again.id]]
