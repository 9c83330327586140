"""The `logwarden` command line: the edge where options become calls and errors become exit codes.

Exit codes: 0 success, 1 the run finished but something failed (error rows, model failures),
2 bad usage or input. Domain errors (`LogwardenError`) are printed without a traceback
(cli_common.handle_errors). Data goes to stdout (`--json`), progress and tables to stderr.
Each command lives in `app/commands/`.
"""

from __future__ import annotations

import logging
import sys

import click

from logwarden import __version__
from logwarden.app.commands import COMMANDS


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="logwarden")
@click.option("-v", "--verbose", count=True, help="More logging on stderr (-v info, -vv debug).")
def main(verbose: int) -> None:
    """logwarden: local-LLM security log analysis (analyze, triage, watch, ui, export)."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


for _command in COMMANDS:
    main.add_command(_command)


if __name__ == "__main__":
    main()
