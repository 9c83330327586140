"""`logwarden ui`: safe defaults of the Streamlit server it starts (the process itself is replaced
by a recorder here; tests/ui/test_ui_browser.py starts the real one)."""

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


def test_defaults_bind_loopback_headless_without_usage_stats(started, tmp_path):
    url = store_at(tmp_path)
    result = CliRunner().invoke(ui, ["--db", url])
    assert result.exit_code == 0, result.output
    command, env = started[0]
    assert command[1:4] == ["-m", "streamlit", "run"] and command[4].endswith("logwarden/ui/app.py")
    assert option(command, "--server.address") == "127.0.0.1" and option(command, "--server.port") == "8501"
    assert option(command, "--server.headless") == "true"
    assert option(command, "--browser.gatherUsageStats") == "false"
    assert env["LOGWARDEN_DB"] == url
    assert "warning" not in result.output


def test_non_loopback_host_warns(started, tmp_path):
    result = CliRunner().invoke(ui, ["--db", store_at(tmp_path), "--host", "0.0.0.0", "--port", "9000"])
    assert result.exit_code == 0
    assert "warning" in result.output and "0.0.0.0" in result.output
    assert option(started[0][0], "--server.address") == "0.0.0.0" and option(started[0][0], "--server.port") == "9000"


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
