"""The `logwarden` group imports a command's module only when that command runs; every name it
lists loads the command of that name."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from logwarden.cli.commands import COMMANDS, load_command
from logwarden.cli.main import main


def test_every_listed_command_loads_under_its_own_name():
    for name in COMMANDS:
        assert load_command(name).name == name
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0 and all(f"  {name} " in result.output for name in COMMANDS)


def imported_after(args: list[str], which: str) -> list[str]:
    """The modules `which` (a Python condition on `m`, a module's name) that a fresh interpreter has
    imported after running `logwarden ARGS` (which must succeed)."""
    probe = ("import json, sys\nfrom click.testing import CliRunner\nfrom logwarden.cli.main import main\n"
             f"assert CliRunner().invoke(main, {args!r}).exit_code == 0\n"
             f"print(json.dumps(sorted(m for m in sys.modules if {which})))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_running_one_command_imports_no_other_commands_module():
    assert imported_after(["config", "--help"], "m.startswith('logwarden.cli.commands.')") == [
        "logwarden.cli.commands.config"]


def test_triage_without_a_store_imports_none():
    """`triage --no-store` needs a run's options, not the pipeline: neither the store nor SQLAlchemy
    is imported (they were, ~0.3 s of a cold triage, through `app.pipeline` for `RunOptions`)."""
    line = "sshd[2211]: Failed password for root from 203.0.113.50 port 51022 ssh2"
    assert imported_after(["triage", line, "--rules-only", "--no-store", "--json"],
                          "m in ('sqlalchemy', 'logwarden.app.store', 'logwarden.app.pipeline')") == []


def test_version_imports_no_command_and_no_command_floor():
    assert imported_after(["--version"], "m.startswith('logwarden.cli.commands.') or m == 'logwarden.cli.common'") == []
