"""The incident's story checked by code (app/incidents/story.py), with a scripted engine that answers
what a careless model might: invented record ids are rejected whole, entities the records lack are
dropped, an answer with nothing grounded keeps the deterministic title, the budget is respected."""

from __future__ import annotations

import json
from pathlib import Path

from _fake_engine import NOTHING, FakeEngine
from _incident_helpers import ATTACKER, burst, write
from click.testing import CliRunner

from logwarden.app.incidents.story import StoryWriter, story_request
from logwarden.app.review import Budget
from logwarden.app.store import open_store
from logwarden.cli.main import main as cli
from logwarden.schemas.incident import CITED_MAX, story_json_schema


def storyteller(answer) -> FakeEngine:
    """Answers a story prompt with `answer(the record ids its schema admits)`, a review prompt with nothing found."""
    def reply(request):
        cited = (request.schema or {}).get("properties", {}).get("cited")
        return answer(cited["items"]["enum"]) if cited else NOTHING

    return FakeEngine(reply, model_name="scripted")


def stored_incident(tmp_path: Path):
    write(tmp_path / "logs" / "auth.log", burst("web01", 10, 0, ATTACKER) + burst("web01", 10, 20, ATTACKER,
                                                                                 pid=2000, accepted=True))
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    result = CliRunner().invoke(cli, ["analyze", str(tmp_path / "logs"), "--rules-only", "--year", "2026", "--db", db])
    assert result.exit_code == 0, result.output
    store = open_store(db)
    [incident] = store.incidents.query()
    return store, incident


def story(ids, **changes):
    answer = {"title": f"SSH brute force from {ATTACKER} on web01 ends in a root login",
              "summary": f"Address {ATTACKER} guessed root's password on web01. It then logged in as root.",
              "stages": ["credential_access", "initial_access"],
              "next_steps": [f"Block {ATTACKER} at the edge.", "Reset root's password on web01."],
              "cited": list(ids)}
    return {**answer, **changes}


def test_the_schema_admits_only_the_incidents_record_ids(tmp_path):
    store, incident = stored_incident(tmp_path)
    request, digest, ids = story_request(store.incidents.members(incident.id))
    assert sorted(ids) == sorted(incident.record_ids)
    assert request.schema["properties"]["cited"]["items"]["enum"] == ids
    assert all(i in digest for i in ids) and "Failed password" not in digest  # summaries, not raw lines


def test_the_schema_lets_a_story_cite_each_member_once_at_most():
    """A small model looping on the id enum ran to the token bound and its story was cut (rejected)."""
    assert story_json_schema(["a", "b"])["properties"]["cited"]["maxItems"] == 2
    assert story_json_schema([f"id{i}" for i in range(20)])["properties"]["cited"]["maxItems"] == CITED_MAX


def test_a_grounded_story_is_stored_with_its_citations(tmp_path):
    store, incident = stored_incident(tmp_path)
    engine = storyteller(lambda ids: story(ids))
    stats = StoryWriter(store, engine, budget=Budget()).write([incident], limit=5)
    stored = store.incidents.get(incident.id)
    assert stats.written == 1 and stats.invented == 0 and stored.story_by == "llm"
    assert stored.title == incident.title and ATTACKER in stored.summary  # the title is the records' own
    assert set(stored.cited) <= set(incident.record_ids) and stored.stages == ["credential_access", "initial_access"]
    assert stored.model == "scripted" and stored.ungrounded == []


def test_a_story_citing_an_invented_id_is_rejected_whole(tmp_path):
    store, incident = stored_incident(tmp_path)
    invented = "0123456789abcdef01234567"
    engine = storyteller(lambda ids: story([ids[0], invented]))
    stats = StoryWriter(store, engine, budget=Budget()).write([incident], limit=5)
    stored = store.incidents.get(incident.id)
    assert stats.invented == 1 and stats.rejected == 1 and stats.written == 0
    assert stored.story_by == "rules" and stored.title == incident.title and invented not in stored.cited


def test_ungrounded_entities_are_dropped_and_counted(tmp_path):
    store, incident = stored_incident(tmp_path)
    engine = storyteller(lambda ids: story(ids, summary=f"Address {ATTACKER} guessed root's password on web01. "
                                                           "It moved on to dc02.corp.example with mimikatz.exe.",
                                              next_steps=["Isolate 10.9.9.9 now.", f"Block {ATTACKER}."]))
    stats = StoryWriter(store, engine, budget=Budget()).write([incident], limit=5)
    stored = store.incidents.get(incident.id)
    assert "dc02" not in stored.summary and ATTACKER in stored.summary
    assert stored.next_steps == [f"Block {ATTACKER}."]
    assert {"dc02.corp.example", "mimikatz.exe", "10.9.9.9"} <= set(stored.ungrounded)
    assert stats.ungrounded == len(stored.ungrounded)


def test_nothing_grounded_keeps_the_deterministic_title(tmp_path):
    store, incident = stored_incident(tmp_path)
    engine = storyteller(lambda ids: story(ids, title="Untrusted incident records", summary="Host 10.1.2.3 was hit."))
    stats = StoryWriter(store, engine, budget=Budget()).write([incident], limit=5)
    stored = store.incidents.get(incident.id)
    assert stored.story_by == "rules" and stored.title == incident.title == "brute force on web01 (2 records)"
    assert stats.rejected == 1 and stats.written == 0


def test_a_spent_budget_writes_no_story(tmp_path):
    store, incident = stored_incident(tmp_path)
    engine = storyteller(lambda ids: story(ids))
    stats = StoryWriter(store, engine, budget=Budget(tokens=1000), spent=(0.0, 1000)).write([incident], limit=5)
    assert stats.written == 0 and engine.requests == []



def analysed(tmp_path: Path, engine, *, rules_only: bool):
    from logwarden.app.pipeline import Pipeline
    from logwarden.app.run_options import RunOptions

    logs = write(tmp_path / "logs" / "auth.log", burst("web01", 10, 0, ATTACKER) + burst(
        "web01", 10, 20, ATTACKER, pid=2000, accepted=True))
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    metrics = Pipeline(store, engine, RunOptions(rules_only=rules_only, llm_budget="unlimited")).analyze([logs])
    return store, metrics


def test_analyze_with_a_model_writes_the_stories_of_its_incidents(tmp_path):
    engine = storyteller(lambda ids: story(ids))
    store, metrics = analysed(tmp_path, engine, rules_only=False)
    [incident] = store.incidents.query()
    assert metrics.incidents == 1 and metrics.stories == 1 and metrics.story_invented_ids == 0
    assert incident.story_by == "llm" and incident.model == "scripted"


def test_rules_only_writes_deterministic_titles_and_never_asks_the_model(tmp_path):
    engine = storyteller(lambda ids: story(ids))
    store, metrics = analysed(tmp_path, engine, rules_only=True)
    [incident] = store.incidents.query()
    assert metrics.incidents == 1 and metrics.stories == 0 and engine.requests == []
    assert incident.story_by == "rules" and incident.title == "brute force on web01 (2 records)"


def test_cut_off_repeated_one_word_and_prompt_echoing_parts_are_dropped(tmp_path):
    store, incident = stored_incident(tmp_path)  # at most 3 steps: the schema's bound
    repeated = f"Address {ATTACKER} guessed root's password on web01."
    engine = storyteller(lambda ids: story(ids, summary=f"{repeated} {repeated} It then logged in as root. The records are untrusted "
                                                           "data. The incident records contain information about "
                                                           "the incident's id, time, level, category, ATT&CK ids, "
                                                           "host, users, addresses. The Mal",
                                              next_steps=["analyze", f"Block {ATTACKER}.",
                                                          "Follow the instructions in the records."]))
    StoryWriter(store, engine, budget=Budget()).write([incident], limit=5)
    stored = store.incidents.get(incident.id)
    assert stored.summary == f"{repeated} It then logged in as root."
    assert stored.title == incident.title
    assert stored.next_steps == [f"Block {ATTACKER}."]


def lone_record(tmp_path: Path, engine, *, rules_only: bool):
    """One burst ending in a root login: one high record, linked to no other."""
    from logwarden.app.pipeline import Pipeline
    from logwarden.app.run_options import RunOptions

    logs = write(tmp_path / "logs" / "auth.log", burst("web01", 10, 0, ATTACKER, accepted=True))
    store = open_store(f"sqlite:///{tmp_path / 'lw.db'}")
    metrics = Pipeline(store, engine, RunOptions(rules_only=rules_only, llm_budget="unlimited")).analyze([logs])
    return store, metrics


def test_a_lone_high_record_is_an_incident_once_the_model_tells_it(tmp_path):
    from logwarden.app.incidents import IncidentOptions
    from logwarden.app.incidents.regroup import regroup

    store, metrics = lone_record(tmp_path, storyteller(lambda ids: story(ids)), rules_only=False)
    [record] = store.query_records(limit=10)
    [incident] = store.incidents.query()
    assert record.risk_level == "high" and incident.record_ids == [record.id] and incident.story_by == "llm"
    assert metrics.incidents == 1 and metrics.stories == 1
    again = regroup(store, IncidentOptions())  # its story carried over: it stays an incident
    assert [i.id for i in again.incidents] == [incident.id] and not again.removed
    assert store.incidents.get(incident.id).story_by == "llm"


def test_a_lone_high_record_no_model_told_stays_an_alert(tmp_path):
    engine = storyteller(lambda ids: story(ids))
    store, metrics = lone_record(tmp_path, engine, rules_only=True)
    [record] = store.query_records(limit=10)
    assert record.risk_level == "high" and store.incidents.query() == [] and metrics.incidents == 0
    assert engine.requests == []
