"""SIGINT and SIGTERM as a request to stop, for the length of a block (`stop_signals`).

Owns: installing and restoring the two handlers. Knows nothing of what stopping means: the
watcher stops following, the CLI's `StopRequest` cancels the run in flight or exits.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def stop_signals(on_signal: Callable[[int], None]) -> Iterator[None]:
    """Inside the block, SIGINT and SIGTERM call `on_signal(signum)` (a request to stop) instead of
    their handlers. Outside the main thread, where Python cannot set handlers, signals stay as they are."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, lambda signum, _frame: on_signal(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
