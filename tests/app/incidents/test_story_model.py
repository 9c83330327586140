"""The real embedded model writes an incident's story (`incidents group`): it is stored, cites only the
incident's record ids, and every entity it names occurs in the records it was shown."""

from __future__ import annotations

import json

import pytest
from _incident_helpers import ATTACKER, burst, write
from click.testing import CliRunner

from logwarden.app.grounding import entities
from logwarden.app.incidents.story import records_digest
from logwarden.app.store import open_store
from logwarden.cli.main import main as cli

pytestmark = pytest.mark.model


def test_the_model_writes_a_grounded_story_citing_only_member_ids(tmp_path):
    logs = tmp_path / "logs"
    write(logs / "a" / "auth.log", burst("web01", 10, 0, ATTACKER) + burst("web01", 10, 20, ATTACKER,
                                                                              pid=2000, accepted=True))
    write(logs / "b" / "secure", burst("db01", 10, 40, ATTACKER, pid=3000))
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    runner = CliRunner()
    assert runner.invoke(cli, ["analyze", str(logs), "--rules-only", "--year", "2026", "--db", db]).exit_code == 0
    grouped = runner.invoke(cli, ["incidents", "group", "--threads", "2", "--json", "--db", db],
                            catch_exceptions=False)
    assert grouped.exit_code == 0, grouped.output
    report = json.loads(grouped.stdout)
    assert report["stories_written"] == 1 and report["stories_new_tokens"] > 0
    with open_store(db) as store:
        [incident] = store.incidents.query()
        members = store.incidents.members(incident.id)
    assert incident.story_by == "llm" and incident.model and incident.summary
    assert incident.cited and set(incident.cited) <= set(incident.record_ids)
    digest = records_digest(members)[0].lower()
    for text in (incident.title, incident.summary, *incident.next_steps):
        assert all(e.lower() in digest for e in entities(text)), text
