"""One module per CLI command; `COMMANDS` names what `logwarden` exposes and where each lives.

A command's module is imported only when that command runs (or `--help` lists them all): a cold
`logwarden triage` would otherwise import every command's floor (the pipeline, the store, the
incidents…), ~0.9 s before it reads its line.
"""

from __future__ import annotations

import importlib

import click

COMMANDS = {  # command name → (module under logwarden.cli.commands, attribute)
    "analyze": ("analyze", "analyze"), "triage": ("triage", "triage"), "watch": ("watch", "watch"),
    "review": ("review", "review"), "ui": ("ui", "ui"), "export": ("export", "export"),
    "report": ("report", "report"), "records": ("records", "records"), "incidents": ("incidents", "incidents"),
    "db": ("records", "db"), "rules": ("rules", "rules"), "baseline": ("baseline", "baseline"),
    "config": ("config", "config"), "eval": ("eval", "eval_command"), "dataset": ("dataset", "dataset"),
    "logons": ("logons", "logons"), "gaps": ("gaps", "gaps"), "navigator": ("navigator", "navigator"),
    "train": ("train", "train"), "feedback": ("feedback", "feedback"), "backtest": ("backtest", "backtest"),
}


def load_command(name: str) -> click.Command:
    module, attribute = COMMANDS[name]
    command = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
    assert isinstance(command, click.Command)
    return command


class LazyGroup(click.Group):
    """A group whose commands are imported by name, when asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.add_command(load_command(cmd_name), cmd_name)
        return self.commands.get(cmd_name)
