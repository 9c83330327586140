"""The `logwarden` command line: the edge where options become calls and errors become exit codes.

Exit codes: 0 success, 1 the run finished but something failed (error rows, model failures),
2 bad usage or input. Domain errors (`LogwardenError`) are printed without a traceback
(cli_common.handle_errors). Data goes to stdout (`--json`), progress and tables to stderr.
Each command lives in `cli/commands/`.

stderr carries logwarden's own messages only: what the libraries under it say (transformers'
FutureWarnings and "Loading weights" bars, bitsandbytes' kernel notices, …) is debug output,
shown with -vv. SIGINT and SIGTERM end a command with 128 + the signal and no traceback
(`cli_common.stop_now`) wherever no stage takes them as a request to stop (`StopRequest`:
`analyze`, `incidents group`; `watch` has its own), so a run in progress is marked `aborted`, not
left `running`.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import warnings

import click

from logwarden import __version__
from logwarden.app.config import CONFIG_VARIABLE, get_settings
from logwarden.cli.commands import LazyGroup
from logwarden.cli.terminal import log_filter

THIRD_PARTY_LOGGERS = ("transformers", "torch", "accelerate", "peft", "bitsandbytes", "xgrammar", "huggingface_hub",
                       "urllib3", "httpx", "httpcore", "drain3", "streamlit", "filelock", "watchdog", "xllamacpp",
                       "bm25s", "py.warnings")


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="logwarden")
@click.option("-v", "--verbose", count=True, help="More logging on stderr (-v info, -vv debug, also the libraries').")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Settings file (LOGWARDEN_*=value lines); default: LOGWARDEN_CONFIG, else none. "
                   "A .env in the current folder is never read.")
def main(verbose: int, config_path: str | None) -> None:
    """logwarden: local-LLM security log analysis (analyze, triage, watch, ui, export)."""
    from logwarden.cli.common import stop_now  # not at the top: `--version` needs none of its imports

    configure_logging(verbose)
    if config_path is not None:  # through the environment: it reaches the UI's server process too
        os.environ[CONFIG_VARIABLE] = os.path.abspath(config_path)
        get_settings.cache_clear()
    tune_gc()
    for signum, default in ((signal.SIGTERM, signal.SIG_DFL), (signal.SIGINT, signal.default_int_handler)):
        if signal.getsignal(signum) is default:
            signal.signal(signum, stop_now)


def tune_gc() -> None:
    """Ingest makes a few short-lived objects per line (events, fields, matches) and no cycles worth
    chasing line by line: at CPython's default (a young collection every 700 allocations, each
    older one walking every object alive) the collector took ~13% of a rules-only run
    (BENCHMARKS.md). Objects alive after start-up (modules, compiled rules) are frozen out of it."""
    gc.freeze()
    gc.set_threshold(100_000, 20, 20)


def configure_logging(verbose: int) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for handler in logging.getLogger().handlers:  # a file name or log text in a message is shown, not obeyed
        if not any(isinstance(f, type(log_filter())) for f in handler.filters):
            handler.addFilter(log_filter())
    logging.getLogger().setLevel(level)
    logging.captureWarnings(True)  # warnings.warn(...) → the "py.warnings" logger, quiet below
    warnings.simplefilter("default")  # each warning once, to the logger (shown at -vv)
    library_level = logging.DEBUG if verbose >= 2 else logging.CRITICAL
    for name in THIRD_PARTY_LOGGERS:
        logging.getLogger(name).setLevel(library_level)
    if verbose < 2:
        _quiet_transformers()


def _quiet_transformers() -> None:
    """transformers and huggingface_hub keep their own verbosity and progress-bar switches, read
    from the environment when they are imported (the commands import them later); if one is
    loaded already, it is told directly."""
    for name, value in (("HF_HUB_DISABLE_PROGRESS_BARS", "1"), ("TRANSFORMERS_VERBOSITY", "error"),
                        ("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")):
        os.environ.setdefault(name, value)
    module = sys.modules.get("transformers.utils.logging")
    if module is not None:
        module.set_verbosity_error()
        module.disable_progress_bar()


if __name__ == "__main__":
    main()
