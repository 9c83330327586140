"""The record page's baseline section under Streamlit's AppTest, on a real store: a record made
by a baseline deviation shows its refs; Accept makes the parameter normal, Mute silences the ref."""

from __future__ import annotations

import json
import random

from _fake_engine import FakeEngine
from _ui_helpers import APP
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

from logwarden.app.baseline import Baseline
from logwarden.app.store import open_store
from logwarden.cli.main import main

STAMP = "10/Mar/2024:06:55:46 +0000"


def line(ip: str, target: str) -> str:
    return f'{ip} - - [{STAMP}] "GET {target} HTTP/1.1" 200 512 "-" "Mozilla/5.0"'


def test_accept_and_mute_from_the_record_page(tmp_path, monkeypatch):
    db = f"sqlite:///{tmp_path / 'lw.db'}"
    rng = random.Random(1)
    history = tmp_path / "old"
    history.mkdir()
    (history / "access.log.1").write_text("\n".join(
        line(f"10.{i // 100}.{i % 100}.1", f"/app/view.php?page={rng.randint(1, 40)}&lang=es") for i in range(200)) + "\n")
    today = tmp_path / "new"
    today.mkdir()
    (today / "access.log").write_text(line("203.0.113.4", "/app/view.php?page=2&lang=es&dbg=1") + "\n")
    runner = CliRunner()
    assert runner.invoke(main, ["baseline", "learn", str(history), "--db", db]).exit_code == 0
    analysed = runner.invoke(main, ["analyze", str(today), "--rules-only", "--db", db, "--json"])
    [record] = [r for r in json.loads(analysed.stdout)["records"] if r["detections"] == ["lw-baseline-web-param"]]

    monkeypatch.setenv("LOGWARDEN_DB", db)
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.query_params["id"] = record["id"]
    at.switch_page("views/record.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert [s.value for s in at.subheader if s.value == "Baseline deviations"]
    assert any("dbg" in t.value for t in at.text)
    at.button(key="deviation_accept_0").click().run()
    assert any("Accepted: parameter 'dbg'" in s.value for s in at.success)
    store = open_store(db)
    fresh = Baseline(store, mode="judge")
    profile = fresh._peek("web", "access.log", "GET /app/view.php")
    assert "dbg" in profile.accepted
    at.button(key="deviation_mute_0").click().run()
    assert store.baseline_mutes() == {"web|access.log|GET%20/app/view.php|name|dbg"}


def test_the_explain_button_streams_the_models_narrative(tmp_path, monkeypatch):
    from logwarden.ui import model

    answer = ('{"findings":[{"evidence":["L1"],"anomaly":"A debug switch on a shop page",'
              '"category":"web_attack","techniques":["T1190"],"risk_level":"low"}],"recommendation":"Watch 203.0.113.4."}')

    db = f"sqlite:///{tmp_path / 'lw.db'}"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "access.log").write_text(
        line("203.0.113.4", "/item.php?id=1%20UNION%20SELECT%20password%20FROM%20users--") + "\n")
    analysed = CliRunner().invoke(main, ["analyze", str(tmp_path / "logs"), "--rules-only", "--db", db, "--json"])
    [record, *_] = json.loads(analysed.stdout)["records"]
    monkeypatch.setattr(model, "get_engine", lambda: FakeEngine(answer))
    monkeypatch.setenv("LOGWARDEN_DB", db)
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.query_params["id"] = record["id"]
    at.switch_page("views/record.py").run()
    at.button(key=f"explain_{record['id']}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(answer in t.value for t in at.text)
    assert any("A debug switch on a shop page" in c.value for c in at.caption)
