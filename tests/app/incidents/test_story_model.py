"""The real embedded model writes incidents' stories (`incidents group`): a story that passes the text gate
is stored, cites only its incident's record ids, and every entity it names occurs in the records it was shown.

Three incidents, not one: a record id holds its file's inode, so the prompt (and the 0.5B's greedy answer)
differs from run to run, and about one story in ten is rejected for copying the prompt's frame (measured
2026-12-08, story.write_stories). A rejected story is the gate working; the test asks that the model gets
at least one of three through and that every one stored holds."""

from __future__ import annotations

import json

import pytest
from _incident_helpers import ATTACKER, OTHER, burst, write
from click.testing import CliRunner

from logwarden.app.grounding import entities
from logwarden.app.incidents.story import records_digest
from logwarden.app.store import open_store
from logwarden.cli.main import main as cli

pytestmark = pytest.mark.model


def test_the_model_writes_grounded_stories_citing_only_member_ids(tmp_path):
    logs = tmp_path / "logs"
    for n, (ip, user) in enumerate(((ATTACKER, "root"), (OTHER, "deploy"), ("192.0.2.44", "oracle"))):
        hour = 2 + 8 * n  # three attacks hours apart, no entity shared: three incidents
        lines = burst(f"web0{n}", hour, 0, ip) + burst(f"web0{n}", hour, 20, ip, pid=2000, accepted=True)
        write(logs / f"web{n}" / "auth.log", [line.replace(" root ", f" {user} ") for line in lines])
        write(logs / f"db{n}" / "secure", [line.replace(" root ", f" {user} ")
                                           for line in burst(f"db0{n}", hour, 40, ip, pid=3000)])
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    runner = CliRunner()
    assert runner.invoke(cli, ["analyze", str(logs), "--rules-only", "--year", "2026", "--db", db]).exit_code == 0
    grouped = runner.invoke(cli, ["incidents", "group", "--threads", "2", "--json", "--db", db],
                            catch_exceptions=False)
    assert grouped.exit_code == 0, grouped.output
    report = json.loads(grouped.stdout)
    assert report["stories_calls"] >= 1 and report["stories_new_tokens"] > 0
    assert report["stories_written"] + report["stories_rejected"] == 3, report
    assert report["stories_written"] >= 1, report
    with open_store(db) as store:
        incidents = store.incidents.query()
        assert len(incidents) == 3
        told = [i for i in incidents if i.story_by == "llm"]
        assert len(told) == report["stories_written"]
        for incident in told:
            members = store.incidents.members(incident.id)
            assert incident.model and incident.summary
            assert incident.cited and set(incident.cited) <= set(incident.record_ids)
            digest = records_digest(members)[0].lower()
            for text in (incident.title, incident.summary, *incident.next_steps):
                assert all(e.lower() in digest for e in entities(text)), text
