"""`logwarden navigator` (issue 45 item 7): the store's records as an ATT&CK Navigator layer (as
Zircolite's `--navigator`). The layer is checked against the required fields of the layer format
4.5 (mitre-attack/attack-navigator, layers/spec/v4.5/layerformat.md): `name`, `domain` (one of the
three domains), `versions.layer` "4.5" and `versions.navigator` at least 4.9.0, and per technique a
`techniqueID` of the form T####[.###]; `score` a number, `comment` a string; a gradient's colours,
minValue < maxValue."""

from __future__ import annotations

import json
import re
from collections import Counter

from _repo import SAMPLE_LOGS
from _store_helpers import make_record
from click.testing import CliRunner

from logwarden.app.export.navigator import navigator_layer
from logwarden.app.store import open_store
from logwarden.cli.main import main as cli
from logwarden.schemas import Technique

DOMAINS = ("enterprise-attack", "mobile-attack", "ics-attack")
TECHNIQUE_ID = re.compile(r"^T\d{4}(\.\d{3})?$")


def assert_valid_layer(layer: dict) -> None:
    assert isinstance(layer["name"], str) and layer["name"]
    assert layer["domain"] in DOMAINS
    versions = layer["versions"]
    assert versions["layer"] == "4.5"
    assert tuple(int(x) for x in versions["navigator"].split(".")) >= (4, 9, 0)
    for technique in layer["techniques"]:
        assert TECHNIQUE_ID.match(technique["techniqueID"])
        assert isinstance(technique["score"], int | float) and not isinstance(technique["score"], bool)
        assert isinstance(technique["comment"], str)
        for item in technique.get("metadata", []):
            assert isinstance(item["name"], str) and isinstance(item["value"], str)
    gradient = layer["gradient"]
    assert len(gradient["colors"]) >= 2 and all(re.match(r"^#[0-9a-fA-F]{6}$", c) for c in gradient["colors"])
    assert gradient["minValue"] < gradient["maxValue"]


def test_scores_count_records_and_comments_name_rules_and_titles():
    brute = Technique(id="T1110.001", name="Password Guessing", tactic="Credential Access")
    records = [
        make_record(line_start=1, line_end=5, detections=["lw-ssh-bruteforce"], techniques=[brute],
                    anomaly="SSH brute force (12 matching lines for src_ip=203.0.113.7. Repeated failures)"),
        make_record(line_start=10, line_end=15, detections=["lw-ssh-bruteforce", "sigma-1234"],
                    techniques=[brute, Technique(id="T1078")], anomaly="SSH brute force (3 matching lines for x)"),
        make_record(line_start=20, line_end=21, detections=[], decided_by="llm", category="account_persistence",
                    techniques=[Technique(id="T1078")], anomaly="A valid account used from a new network"),
    ]
    layer = navigator_layer(records, name="case 42")
    assert_valid_layer(layer)
    scores = {t["techniqueID"]: t["score"] for t in layer["techniques"]}
    assert scores == {"T1110.001": 2, "T1078": 2}
    comment = next(t["comment"] for t in layer["techniques"] if t["techniqueID"] == "T1110.001")
    assert comment.startswith("2 record(s).")
    assert "lw-ssh-bruteforce (2)" in comment and "sigma-1234 (1)" in comment
    assert "titles: SSH brute force (2)" in comment and "matching lines" not in comment
    valid = next(t["comment"] for t in layer["techniques"] if t["techniqueID"] == "T1078")
    assert "model: account_persistence (1)" in valid and "A valid account used from a new network (1)" in valid
    assert layer["gradient"]["maxValue"] == 2 and layer["name"] == "case 42"


def test_an_empty_store_gives_a_valid_empty_layer():
    layer = navigator_layer([])
    assert layer["techniques"] == []
    assert_valid_layer(layer)


def test_cli_layer_of_a_real_rules_run(tmp_path):
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    runner = CliRunner()
    ran = runner.invoke(cli, ["analyze", str(SAMPLE_LOGS / "auth.log"), "--rules-only", "--json", "--db", db])
    assert ran.exit_code == 0, ran.output
    out = tmp_path / "layer.json"
    done = runner.invoke(cli, ["navigator", "--out", str(out), "--json", "--db", db])
    assert done.exit_code == 0, done.output
    layer = json.loads(out.read_text())
    assert_valid_layer(layer)
    records = open_store(db).query_records(limit=10_000)
    expected = Counter(t for r in records for t in {x.id for x in r.techniques})
    assert expected and {t["techniqueID"]: t["score"] for t in layer["techniques"]} == dict(expected)
    summary = json.loads(done.stdout)
    assert summary["records"] == len(records) and summary["techniques"] == len(expected)
    high = runner.invoke(cli, ["navigator", "--min-risk", "critical", "--db", db])
    assert high.exit_code == 0
    assert sum(t["score"] for t in json.loads(high.stdout)["techniques"]) <= sum(expected.values())


def test_cli_never_creates_a_store_and_refuses_json_without_a_file(tmp_path):
    runner = CliRunner()
    missing = tmp_path / "nope.db"
    done = runner.invoke(cli, ["navigator", "--out", str(tmp_path / "layer.json"), "--db", f"sqlite:///{missing}"])
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert not missing.exists() and not (tmp_path / "layer.json").exists()
    assert runner.invoke(cli, ["navigator", "--json", "--db", f"sqlite:///{missing}"]).exit_code == 2
    assert runner.invoke(cli, ["navigator", "--help"]).exit_code == 0
