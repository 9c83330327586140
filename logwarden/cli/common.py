"""Pieces shared by the CLI commands: error handling at the boundary, common options, store opening."""

from __future__ import annotations

import functools
import os
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from logwarden.app.backends import BACKENDS, EngineOptions
from logwarden.app.config import get_settings
from logwarden.cli.terminal import json_text, shown_block
from logwarden.engine.load import ENGINE_QUANTS, ENGINES
from logwarden.errors import InputError, LogwardenError
from logwarden.schemas.record import CLOSE_REASONS, STATUSES

# Neither console turns `:name:` into an emoji; stdout never reads markup. Log text reaches either
# only as `terminal.cell` Text (tables) or through `shown` with markup=False (lines).
err_console = Console(stderr=True, emoji=False)
out_console = Console(markup=False, emoji=False)
# One colour per risk level on terminals (Hayabusa's habit: the eye finds the reds first).
LEVEL_STYLES = {"critical": "bold white on red", "high": "bold red", "medium": "yellow", "low": "cyan",
                "info": "dim"}


class Stopped(BaseException):
    """SIGINT or SIGTERM where no stage takes it as a request (`stop_now`): the command ends where
    it is. A BaseException, as KeyboardInterrupt is, so that no `except Exception` swallows it."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def stop_now(signum: int, _frame=None) -> None:
    """The CLI's handler of SIGINT and SIGTERM outside a stop request: raise `Stopped` where the main
    thread is (a read, an export, start-up); `handle_errors` makes it 128 + the signal, no traceback."""
    raise Stopped(signum)


# The review states before issue 42 → what to pass now.
OLD_STATUSES = {"new": "--status open", "confirmed": "--status in_progress (or closed --reason true_positive)",
                "false_positive": "--status closed --reason false_positive",
                "resolved": "--status closed --reason true_positive"}


class StatusChoice(click.Choice):
    """A review state; an old one (new, confirmed, false_positive, resolved) is a usage error naming
    what replaced it."""

    def __init__(self) -> None:
        super().__init__(STATUSES)

    def convert(self, value, param, ctx):
        if value in OLD_STATUSES:
            self.fail(f"{value!r} is no longer a review state (states: {', '.join(STATUSES)}); "
                      f"use {OLD_STATUSES[value]}.", param, ctx)
        return super().convert(value, param, ctx)


def review_options(func: Callable) -> Callable:
    """--status, --reason, --note and --reviewer of `records review` and `incidents review`."""
    for option in reversed((
            click.option("--status", type=StatusChoice(), default=None,
                         help="The new state: open, acknowledged, in_progress or closed (default: keep it)."),
            click.option("--reason", type=click.Choice(CLOSE_REASONS), default=None,
                         help="Why it is closed (with --status closed, which needs one)."),
            click.option("--note", default=None, help="Analyst note (replaces the current note)."),
            click.option("--reviewer", default=None, help="Who reviewed it (default: the login name)."))):
        func = option(func)
    return func


def review_text(review) -> str:
    """A state as a person reads it: `closed (false_positive)`, `in_progress`. `review` is a record,
    an incident, a trail row or a written review (a dict)."""
    get = review.get if isinstance(review, dict) else lambda name: getattr(review, name)
    reason = get("close_reason")
    return get("status") + (f" ({reason})" if reason else "")


def login() -> str | None:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def handle_errors(func: Callable) -> Callable:
    """Turn domain errors into a one-line message and the error's exit code, and a signal that
    ended a command (`Stopped`) into 128 + its number."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except LogwardenError as exc:
            err_console.print(f"[bold red]error:[/] {escape(shown_block(exc))}", highlight=False)
            sys.exit(exc.exit_code)
        except Stopped as stop:
            AtomicFile.discard_all()
            err_console.print(f"stopped by {signal_name(stop.signum)}", highlight=False, markup=False)
            sys.exit(128 + stop.signum)

    return wrapper


def signal_name(signum: int | None) -> str:
    return signal.Signals(signum).name if signum else "a stop"


def db_option(func: Callable) -> Callable:
    return click.option("--db", "db_url", envvar="LOGWARDEN_DB", default=None, callback=_store_url,
                        help="The store: a SQLite file's path or a SQLAlchemy URL (postgresql+psycopg://…); "
                             "default: logwarden.db under LOGWARDEN_HOME.")(func)


def _store_url(_ctx, _param, text: str | None) -> str | None:
    if not text:  # the default: nothing to parse, and `triage --no-store` imports no store (issue 46)
        return text
    from logwarden.app.store.database import store_url

    return store_url(text)


def json_option(func: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON on stdout.")(func)


def sigma_option(func: Callable) -> Callable:
    return click.option("--sigma", "sigma_paths", multiple=True, type=click.Path(exists=True),
                        callback=_rule_packs,
                        help="Extra Sigma rule pack (folder, .zip or .yml), repeatable; loaded after the shipped "
                             "and installed packs and LOGWARDEN_SIGMA_PATHS.")(func)


def _rule_packs(_ctx, _param, paths: tuple[str, ...]) -> tuple[str, ...]:
    """A pack is a folder or a regular file: `--sigma /dev/zero` says what it is instead."""
    from logwarden.app.ingest.files import special_kind

    for path in paths:
        mode = os.stat(path).st_mode
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            raise click.BadParameter(f"{shown_block(path)} is {special_kind(mode)}, not a folder, a .zip or a .yml "
                                     "file of Sigma rules", param_hint="--sigma")
    return paths


def llm_budget_option(func: Callable) -> Callable:
    return click.option("--llm-budget", default=None, metavar="DURATION|TOKENS|unlimited",
                        help="How much model work: 90s, 5m, 1h, 20000tok, unlimited, or auto (unlimited on a GPU, "
                             "a few minutes on a CPU). What it leaves waits for `logwarden review --pending`. "
                             "Default: LOGWARDEN_LLM_BUDGET, auto.")(func)


def baseline_option(func: Callable) -> Callable:
    from logwarden.app.baseline import MODES

    return click.option("--baseline", "baseline_mode", type=click.Choice(MODES), default=None,
                        help="Baselines of normal: judge = report deviations and learn what did not deviate; "
                             "learn = learn everything, report nothing; off. Default: LOGWARDEN_BASELINE, judge.")(func)


def model_options(*, budget: bool = False) -> Callable[[Callable], Callable]:
    """The one decorator of every command that asks the model: which backend and model, and how
    (`engine_options`; the command takes them as `**engine_kw`, for `make_engine_options`), and
    with `budget` how much model work (`--llm-budget`: the commands whose work queues for review)."""

    def decorate(func: Callable) -> Callable:
        func = engine_options(func)
        return llm_budget_option(func) if budget else func

    return decorate


def engine_options(func: Callable) -> Callable:
    """The options that choose and tune the model backend (`model_options` gives them to a command)."""
    options = [
        click.option("--backend", type=click.Choice(BACKENDS), default="local", show_default=True,
                     help="local = in-process engine (see --engine); openai = OpenAI-compatible server(s)."),
        click.option("--engine", type=click.Choice(ENGINES), default=None,
                     help="local backend: auto = llama.cpp for GGUF models on CPU, transformers on CUDA "
                          "(default: settings, auto)."),
        click.option("--model", default=None, help="embedded | embedded-1.5b | HF id in the local cache | folder | .gguf "
                     "(openai backend: the served model name). Default: embedded."),
        click.option("--adapter", default=None, help="PEFT LoRA adapter folder, or 'none' to disable the default adapter."),
        click.option("--quant", type=click.Choice(ENGINE_QUANTS), default=None,
                     help="weights: auto = llama.cpp: the derived Q4_0 (adapter merged) for embedded, a GGUF as shipped "
                          "otherwise; transformers: nf4 on CUDA, fp32 on CPU. q4_0 / q4_k_m (the GGUF as shipped + "
                          "the adapter at run time) pick llama.cpp, the others transformers (default: settings, auto)."),
        click.option("--threads", type=int, default=None,
                     help="CPU threads for llama.cpp or torch (default: settings, else the engine's)."),
        click.option("--draft-model", default=None,
                     help="llama.cpp: speculative decoding, this GGUF model (embedded, or a .gguf of the same "
                          "vocabulary) drafting for --model, e.g. embedded for embedded-1.5b (default: settings, off)."),
        click.option("--draft-tokens", type=click.IntRange(min=1), default=None,
                     help="llama.cpp: most tokens the draft model proposes a step (default: settings, 8)."),
        click.option("--base-url", "base_urls", multiple=True, help="openai backend: server URL, repeatable (…/v1)."),
        click.option("--api-key-env", default=None, help="openai backend: name of the env var holding the API key."),
        click.option("--concurrency", type=int, default=8, show_default=True, help="openai backend: requests in flight."),
        click.option("--max-rps", type=float, default=None, help="openai backend: request rate limit (token bucket)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def make_engine_options(kw: dict) -> EngineOptions:
    """The engine options of `engine_options`' flags (taken out of `kw`) over the settings."""
    names = ("backend", "engine", "model", "adapter", "quant", "threads", "max_batch", "draft_model", "draft_tokens",
             "base_urls", "api_key_env",
             "concurrency", "max_rps")
    return EngineOptions.from_settings(get_settings(), **{name: kw.pop(name, None) for name in names})


def open_store_from(db_url: str | None, *, readonly: bool = False, current: bool = True, create: bool = True):
    """The store of `--db` (or the settings'). Commands that only read pass `readonly`: they create,
    migrate and write nothing, and can read a database in a read-only file or folder; commands that
    review what is stored pass `create=False`: a store that is not there is an error (exit 2), never
    a new empty one."""
    from logwarden.app.store import open_store

    return open_store(db_url or get_settings().db_url, readonly=readonly, current=current, create=create)


def known_id(found: str | None, given: str, kind: str) -> str:
    """The full id the store resolved `given` to, or a usage error (exit 2): an id no record or incident
    has is a mistyped argument, as a bad flag is, not a failure of the command (every id-taking command)."""
    if found is None:
        raise InputError(f"no {kind} with id {given!r}; `logwarden {kind}s list` shows the ids")
    return found


def db_origin() -> str:
    """Where the store URL of the running command came from: `--db`, `LOGWARDEN_DB`, the config
    file, or the default under LOGWARDEN_HOME (and where that came from)."""
    from click.core import ParameterSource

    from logwarden.app.config import origins

    source = click.get_current_context().get_parameter_source("db_url")
    if source is ParameterSource.COMMANDLINE:
        return "--db"
    if source is ParameterSource.ENVIRONMENT:
        return "environment LOGWARDEN_DB"
    found = origins()
    return found["db"] if get_settings().db else f"default: logwarden.db under home (home: {found['home']})"


def open_for_writing(path: str) -> AtomicFile:
    """A text file to be written whole, or an `InputError` that says why it cannot be (a missing
    folder, a folder, a read-only or special file such as /proc/version — root may open that one,
    but nothing can be written to it). The lines go to a temporary file beside it, renamed over
    it only once all are written: a full disk leaves the old file (or none), never half of one."""
    target = Path(path).expanduser()
    if target.is_dir():
        raise InputError(f"--out {path}: is a folder; give a file name inside it")
    if not target.parent.is_dir():
        raise InputError(f"--out {path}: the folder {target.parent} does not exist; create it first")
    if target.exists() and (not target.is_file() or not target.stat().st_mode & 0o222):
        raise InputError(f"--out {path}: not a writable regular file")
    try:
        return AtomicFile(target)
    except OSError as exc:
        raise InputError(f"--out {path}: cannot write it ({exc.strerror or exc})") from None


class AtomicFile:
    """A temporary file in the target's folder that becomes the target on `commit` (or vanishes,
    also when a signal ends the command before it is written: `discard_all`)."""

    _open: set[AtomicFile] = set()

    def __init__(self, target: Path):
        self.name = str(target)
        self.target = target
        self.handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=target.parent, delete=False,
                                                  prefix=f".{target.name}.", suffix=".tmp")
        AtomicFile._open.add(self)

    @classmethod
    def discard_all(cls) -> None:
        for file in list(cls._open):
            file.discard()

    def write(self, text: str) -> None:
        self.handle.write(text)

    def commit(self) -> None:
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.handle.close()
        mode = self.target.stat().st_mode & 0o777 if self.target.exists() else 0o666 & ~_umask()
        os.chmod(self.handle.name, mode)
        os.replace(self.handle.name, self.target)
        AtomicFile._open.discard(self)

    def discard(self) -> None:
        AtomicFile._open.discard(self)
        try:
            self.handle.close()  # flushing what is buffered may fail again (the disk is still full)
        except OSError:
            pass
        if os.path.exists(self.handle.name):
            os.unlink(self.handle.name)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_lines(out: AtomicFile, lines) -> int:
    """Write `lines` (each + newline) to a file from `open_for_writing`, then put it in place."""
    count = 0
    try:
        for line in lines:
            out.write(line + "\n")
            count += 1
        out.commit()
    except OSError as exc:
        out.discard()
        raise InputError(f"--out {out.name}: writing failed ({exc.strerror or exc}); "
                         f"the file was left as it was") from None
    except BaseException:
        out.discard()
        raise
    return count


def parse_time(value: str | None, option: str = "--since") -> datetime | None:
    """An ISO time (naive = UTC) or an age before now (15m, 24h, 7d)."""
    if not value:
        return None
    units = {"m": "minutes", "h": "hours", "d": "days"}
    if value[-1:] in units and value[:-1].isdigit():
        try:
            return datetime.now(timezone.utc) - timedelta(**{units[value[-1]]: int(value[:-1])})
        except OverflowError:  # further back than any date: no bound at all
            return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InputError(f"{option} {value!r}: give an ISO time (2026-11-30T08:00) or an age like 15m, 24h, "
                         "7d") from None
    try:  # the store compares in UTC: 0001-01-01T00:00+14:00 has no UTC time
        return parsed.astimezone(timezone.utc) if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
    except OverflowError:
        raise InputError(f"{option} {value!r}: this time has no UTC equivalent (before year 1 or after 9999 "
                         "once its offset is applied); give a time within years 1–9999 UTC") from None


def time_range(since: str | None, until: str | None) -> tuple[datetime | None, datetime | None]:
    """`--since` and `--until` as times (`parse_time`); a range that ends before it starts is an error."""
    start, end = parse_time(since, "--since"), parse_time(until, "--until")
    if start is not None and end is not None and end < start:
        raise InputError(f"--until {until!r} is before --since {since!r}: nothing can match; swap them")
    return start, end


def time_filter_hint(kind: str, count: int, first: datetime | None, last: datetime | None) -> str:
    """Why --since/--until found nothing while `count` stored `kind` match the other filters: their
    range, and that the times compared are the logs' own (old logs analysed today are not "24h")."""
    if first is None or last is None:
        return f"none of the {count:,} stored {kind} matching the other filters has a time the logs gave"
    return (f"--since/--until matched none of the {count:,} stored {kind} that match the other filters: their last "
            f"events run from {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC. Times are the logs' own (when "
            f"the events happened, not when they were analysed): try --since {first:%Y-%m-%d}")


class StopRequest:
    """SIGINT/SIGTERM as a request to stop (inside `installed()`): the first calls `on_stop` (which
    cancels the work in flight), a second exits at once. `signum` says which came first."""

    def __init__(self, on_stop: Callable[[], None]):
        self.on_stop = on_stop
        self.signum: int | None = None

    def installed(self):
        from logwarden.app.signals import stop_signals

        return stop_signals(self._on_signal)

    def _on_signal(self, signum: int) -> None:
        if self.signum is not None:
            AtomicFile.discard_all()
            exit_at_once(128 + signum)  # asked twice: no more waiting for anything
        self.signum = signum
        self.on_stop()


def load_engine(options: EngineOptions):
    """`open_engine` in a thread of its own, so that a signal during the load (llama.cpp's load and
    its prefix's prefill are long calls into C, where Python runs no handler) ends the command at
    once with 128 + its number: nothing of a run exists yet, and the half-loaded model is not torn
    down under the loader (`exit_at_once`)."""
    from logwarden.app.backends import open_engine

    outcome: dict = {}

    def load() -> None:
        try:
            outcome["engine"] = open_engine(options)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread as it is
            outcome["error"] = exc

    loader = threading.Thread(target=load, name="logwarden-load", daemon=True)
    loader.start()
    try:
        while loader.is_alive():
            loader.join(0.1)
    except Stopped as stop:
        err_console.print(f"stopped by {signal_name(stop.signum)} while loading the model", highlight=False,
                          markup=False)
        AtomicFile.discard_all()
        exit_at_once(128 + stop.signum)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["engine"]


def exit_at_once(code: int) -> None:
    """Exit without the interpreter's teardown, after flushing what was printed: llama.cpp may still
    be inside one prefill of a cancelled task (tens of seconds on a CPU); waiting for it at exit
    is what made a stop during model work slow, and tearing it down under it what crashed."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def print_json(data) -> None:
    click.echo(json_text(data))
