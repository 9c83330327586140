"""The watch verb (`logwarden watch`): folders followed until a stop, their new lines analysed and
stored in batches.

Owns: `WatchOptions` — the run's options and the watcher's batching, from the settings and what a
command was given — and the order of start-up: the stop signals are caught before the store is
opened and the run is made, so a stop during set-up ends the run `stopped`, as one a minute later
would. Following files is app/watch.py's; analysing them the pipeline's. Knows nothing of terminals.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from logwarden.app.config import Settings, declared
from logwarden.app.pipeline import Pipeline
from logwarden.app.run_options import RunOptions
from logwarden.app.signals import stop_signals
from logwarden.app.store import Store
from logwarden.app.watch import Watcher, WatchStats
from logwarden.engine.api import Engine


@dataclass(slots=True)
class WatchOptions:
    run: RunOptions
    batch_lines: int = declared("watch_max_batch")  # a file's new lines are analysed once this many wait
    max_delay_ms: int = declared("watch_max_delay_ms")  # or at the latest after this delay
    partial_timeout_s: float = declared("watch_partial_line_timeout_s")
    from_start: bool = False  # files there at start are read from their beginning, not tailed

    @classmethod
    def from_settings(cls, settings: Settings, *, batch_lines: int | None = None, max_delay_ms: int | None = None,
                      from_start: bool = False, **run) -> WatchOptions:
        """The settings' watch options with those given (None = not given); `run`: the run's, as
        `RunOptions.from_settings` takes them."""
        options = RunOptions.from_settings(settings, **run)
        options.commit_every_windows = None  # a batch's records and its offset land in one transaction
        options.incremental = True  # incidents follow each batch; the review runs beside the watcher
        return cls(options, batch_lines=batch_lines or settings.watch_max_batch,
                   max_delay_ms=max_delay_ms or settings.watch_max_delay_ms,
                   partial_timeout_s=settings.watch_partial_line_timeout_s, from_start=from_start)


def follow(folders: Sequence[str], open_store: Callable[[], Store], engine: Engine | None, options: WatchOptions, *,
           max_seconds: float | None = None, on_stored: Callable | None = None,
           status: Callable[[str], None] | None = None, on_started: Callable[[], None] | None = None) -> WatchStats:
    """Watch `folders` until SIGINT/SIGTERM (or `max_seconds`); `on_stored` is given each batch's
    stored records, `status` a status line now and then, `on_started` a call once following begins."""
    stop = threading.Event()
    with stop_signals(lambda _signum: stop.set()):
        pipeline = Pipeline(open_store(), engine, options.run, command="watch " + " ".join(folders),
                            on_stored=on_stored)
        watcher = Watcher(folders, pipeline, max_batch=options.batch_lines, max_delay_ms=options.max_delay_ms,
                          partial_timeout_s=options.partial_timeout_s, from_start=options.from_start,
                          status=status, node=options.run.node, stop=stop)
        if on_started is not None:
            on_started()
        return watcher.run(max_seconds=max_seconds)
