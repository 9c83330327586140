"""`logwarden ui`: safe defaults of the server it starts (the process itself is replaced by a
recorder here; tests/ui/test_ui_browser.py and tests/ui/test_ui_door.py start the real one)."""

from __future__ import annotations

import importlib

import pytest
from click.testing import CliRunner

from logwarden.app.store import open_store
from logwarden.cli.commands.ui import is_loopback, ui

# the package exports the click command under the module's name; take the module itself
ui_module = importlib.import_module("logwarden.cli.commands.ui")


@pytest.fixture
def started(monkeypatch):
    calls: list[tuple[list[str], dict[str, str]]] = []
    monkeypatch.setattr(ui_module, "_run", lambda command, env: calls.append((command, env)) or 0)
    return calls


def option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def store_at(tmp_path) -> str:
    """A store that exists: `ui` opens one, it never creates one (issue 31)."""
    url = f"sqlite:///{tmp_path / 'x.db'}"
    open_store(url).close()
    return url


def test_defaults_bind_loopback_with_a_random_token_in_the_url(started, tmp_path, monkeypatch):
    monkeypatch.delenv("LOGWARDEN_UI_PASSWORD", raising=False)
    url = store_at(tmp_path)
    result = CliRunner().invoke(ui, ["--db", url])
    assert result.exit_code == 0, result.output
    command, env = started[0]
    assert command[1:3] == ["-m", "logwarden.ui.serve"]
    assert option(command, "--host") == "127.0.0.1" and option(command, "--port") == "8501"
    assert "--allow-host" not in command
    assert env["LOGWARDEN_DB"] == url
    token = env["LOGWARDEN_UI_TOKEN"]
    assert len(token) >= 40 and f"http://127.0.0.1:8501/?token={token} " in result.output  # one line, copyable
    assert "warning" not in result.output
    CliRunner().invoke(ui, ["--db", url])
    assert started[1][1]["LOGWARDEN_UI_TOKEN"] != token  # a new one each start


def test_a_password_replaces_the_token_and_allowed_names_reach_the_server(started, tmp_path, monkeypatch):
    from logwarden.app.config import get_settings

    monkeypatch.setenv("LOGWARDEN_UI_PASSWORD", "correct horse")
    monkeypatch.setenv("LOGWARDEN_UI_TOKEN", "left over")
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(ui, ["--db", store_at(tmp_path), "--allow-host", "dash.example",
                                         "--allow-host", "box.lan"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    command, env = started[0]
    assert "LOGWARDEN_UI_TOKEN" not in env and "token=" not in result.output
    assert [command[i + 1] for i, arg in enumerate(command) if arg == "--allow-host"] == ["dash.example", "box.lan"]


def test_non_loopback_host_warns(started, tmp_path):
    result = CliRunner().invoke(ui, ["--db", store_at(tmp_path), "--host", "0.0.0.0", "--port", "9000"])
    assert result.exit_code == 0
    assert "warning" in result.output and "0.0.0.0" in result.output
    assert option(started[0][0], "--host") == "0.0.0.0" and option(started[0][0], "--port") == "9000"


def test_bad_port_and_bad_store_fail_before_starting(started, tmp_path):
    assert CliRunner().invoke(ui, ["--port", "70000"]).exit_code == 2
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(ui, ["--db", f"sqlite:///{blocker / 'sub' / 'x.db'}"])
    assert result.exit_code != 0 and "error:" in result.output and "Traceback" not in result.output
    assert started == []


def test_server_exit_code_is_ours(monkeypatch, tmp_path):
    monkeypatch.setattr(ui_module, "_run", lambda command, env: 3)
    assert CliRunner().invoke(ui, ["--db", store_at(tmp_path)]).exit_code == 3


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.1", True), ("localhost", True), ("::1", True),
                                                ("[::1]", True), ("127.0.0.53", True), ("0.0.0.0", False),
                                                ("192.168.1.5", False), ("::", False), ("example.com", False)])
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback
