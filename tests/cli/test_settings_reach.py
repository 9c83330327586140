"""Every run setting reaches every command that runs the model: `LOGWARDEN_MAX_NEW_TOKENS`,
`LOGWARDEN_MAX_BATCH` and `LOGWARDEN_PROMPT_TOKEN_BUDGET` set in the environment are what analyze,
watch, triage, eval and the UI's triage page hand the engine (one source: `Settings`, read through
`RunOptions.from_settings` / `EngineOptions.from_settings`). The engine is the tests' FakeEngine: it
answers "nothing found"; everything around it is real (CLI, pipeline, SQLite store, Streamlit)."""

from __future__ import annotations

import json

import pytest
from _fake_engine import FakeEngine
from _ui_helpers import APP
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

from logwarden.app import backends
from logwarden.app.config import Settings, get_settings
from logwarden.app.run_options import RunOptions
from logwarden.app.store import open_store
from logwarden.cli.main import main
from logwarden.ui import (
    model,  # here, not in a test: imported while `engine` patches open_engine, it would keep the fake
)

NOTHING = json.dumps({"findings": [], "recommendation": "none"})
MAX_NEW_TOKENS, MAX_BATCH, BUDGET = 77, 3, 555
STORY_TOKENS = 99  # LOGWARDEN_INCIDENT_STORY_MAX_NEW_TOKENS: an incident story's answer (analyze writes them)
LINES = [f"Mar 11 02:14:{i:02d} web-01 sshd[{2211 + i}]: Failed password for root from 203.0.113.45 port {40000 + i} ssh2"
         for i in range(40)]


class Opened:
    """An engine the command opened, with the options it was opened with."""

    def __init__(self, options: backends.EngineOptions):
        self.options = options
        self.engine = FakeEngine(NOTHING)


@pytest.fixture
def engine(monkeypatch):
    """The settings above in the environment, and the recording engine wherever one is opened."""
    for name, value in (("MAX_NEW_TOKENS", MAX_NEW_TOKENS), ("MAX_BATCH", MAX_BATCH), ("PROMPT_TOKEN_BUDGET", BUDGET),
                        ("INCIDENT_STORY_MAX_NEW_TOKENS", STORY_TOKENS)):
        monkeypatch.setenv(f"LOGWARDEN_{name}", str(value))
    get_settings.cache_clear()
    made: list[Opened] = []

    def open_engine(options):
        made.append(Opened(options))
        return made[-1].engine

    monkeypatch.setattr(backends, "open_engine", open_engine)
    yield made
    get_settings.cache_clear()


def _used_the_settings(made: list[Opened]) -> FakeEngine:
    [opened] = made
    fake = opened.engine
    assert opened.options.max_batch == MAX_BATCH
    assert fake.max_new_tokens and MAX_NEW_TOKENS in fake.max_new_tokens  # the review's answers
    assert set(fake.max_new_tokens) <= {MAX_NEW_TOKENS, STORY_TOKENS}  # and the stories', each from its setting
    assert max(map(len, fake.calls)) <= MAX_BATCH
    return fake


@pytest.fixture
def logs(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "auth.log").write_text("\n".join(LINES) + "\n")
    return folder


def test_analyze_gets_the_settings(engine, logs, tmp_path):
    result = CliRunner().invoke(main, ["analyze", str(logs), "--llm-policy", "all", "--db",
                                       f"sqlite:///{tmp_path}/a.db"])
    assert result.exit_code == 0, result.output
    _used_the_settings(engine)


def test_watch_gets_the_settings(engine, logs, tmp_path):
    result = CliRunner().invoke(main, ["watch", str(logs), "--from-start", "--max-seconds", "6", "--llm-policy",
                                       "signals", "--db",
                                       f"sqlite:///{tmp_path}/w.db"])
    assert result.exit_code == 0, result.output
    _used_the_settings(engine)


def test_triage_gets_the_settings(engine, tmp_path):
    result = CliRunner().invoke(main, ["triage", "--db", f"sqlite:///{tmp_path}/t.db", "--json"],
                                input="\n".join(LINES[:12]) + "\n")
    assert result.exit_code == 0, result.output
    fake = _used_the_settings(engine)
    # the budget sized the prompt: far smaller than the 700-token default would allow
    assert max(map(len, fake.prompts)) < 4 * BUDGET + 400


def test_eval_gets_the_settings(engine, logs, tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"file": "logs/auth.log", "line_start": 1, "line_end": 40, "category": "brute_force",
                                  "risk_min": "medium"}) + "\n")
    result = CliRunner().invoke(main, ["eval", "--labels", str(labels), "--json", "--llm-policy", "all"])
    assert result.exit_code == 0, result.output
    _used_the_settings(engine)


def test_the_ui_triage_page_gets_the_settings(engine, monkeypatch, tmp_path):
    opened = Opened(backends.EngineOptions.from_settings(Settings()))
    engine.append(opened)
    monkeypatch.setattr(model, "get_engine", lambda: opened.engine)
    monkeypatch.setenv("LOGWARDEN_DB", f"sqlite:///{tmp_path}/ui.db")
    open_store(f"sqlite:///{tmp_path}/ui.db").close()  # the UI opens a store, it never creates one
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.switch_page("views/triage.py").run()
    at.text_area(key="triage_text").input("\n".join(LINES[:12]))
    at.toggle(key="triage_use_model").set_value(True)
    at.button(key="triage_assess").click().run()
    assert not at.exception, [e.value for e in at.exception]
    _used_the_settings(engine)


def test_run_options_take_every_run_setting_from_the_settings(monkeypatch):
    """The settings object is the one source: each run field follows its environment variable."""
    values = {"MAX_NEW_TOKENS": "11", "MAX_BATCH": "5", "PROMPT_TOKEN_BUDGET": "333", "WINDOW_MAX_LINES": "99",
              "WINDOW_MAX_GAP_S": "12.5", "NODE": "web01", "WATCH_PARTIAL_LINE_TIMEOUT_S": "7"}
    for name, value in values.items():
        monkeypatch.setenv(f"LOGWARDEN_{name}", value)
    options = RunOptions.from_settings(Settings(), max_batch=None, node="given")
    assert (options.max_new_tokens, options.max_batch, options.prompt_token_budget) == (11, 5, 333)
    assert (options.window_max_lines, options.window_max_gap_s, options.quiet_final_s) == (99, 12.5, 7)
    assert options.node == "given"  # a given option wins; None means "not given"


def test_watch_options_take_the_watch_settings_and_a_given_option_wins(monkeypatch):
    from logwarden.app.follow import WatchOptions

    for name, value in (("WATCH_MAX_BATCH", "42"), ("WATCH_MAX_DELAY_MS", "1234"), ("WATCH_PARTIAL_LINE_TIMEOUT_S", "7"),
                        ("MAX_NEW_TOKENS", "11"), ("NODE", "web01")):
        monkeypatch.setenv(f"LOGWARDEN_{name}", value)
    options = WatchOptions.from_settings(Settings(), rules_only=True)
    assert (options.batch_lines, options.max_delay_ms, options.partial_timeout_s) == (42, 1234, 7)
    assert (options.run.max_new_tokens, options.run.node, options.run.rules_only) == (11, "web01", True)
    assert options.run.commit_every_windows is None  # a batch's records and its offset land in one transaction
    given = WatchOptions.from_settings(Settings(), batch_lines=5, max_delay_ms=10, from_start=True, node="given")
    assert (given.batch_lines, given.max_delay_ms, given.from_start, given.run.node) == (5, 10, True, "given")
