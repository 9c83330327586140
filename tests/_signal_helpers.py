"""A real `logwarden` process sent a real signal once its stderr shows that a stage has begun
(issue 44, item 4): how it ended, how long after the signal, and everything it said."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from _repo import REPO

START_S = 600  # imports, a model's load and the work before the stage on a loaded 2-core machine: a wait, not a bound


@dataclass(frozen=True, slots=True)
class Ended:
    returncode: int
    after_s: float  # from the (first) signal to the process's end
    stderr: str


def signal_during(args: list[str], *, when: str | Callable[[], bool], signals: tuple[int, ...] = (signal.SIGTERM,), delay_s: float = 0.5,
                  between_s: float = 0.2, env: dict[str, str] | None = None) -> Ended:
    """Start `logwarden -v ARGS`, wait for a stderr line holding `when` (or for `when()` to be true),
    `delay_s` more (the stage is under way), then send `signals` `between_s` apart; wait for its end."""
    process = subprocess.Popen([sys.executable, "-m", "logwarden.cli.main", "-v", *args], cwd=REPO,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, **(env or {})})
    seen: list[str] = []
    deadline = time.monotonic() + START_S
    if callable(when):
        while not when() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.poll() is None, "it ended before the stage began:\n" + process.communicate()[1]
    else:
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            seen.append(line)
            if when in line or not line:
                break
        assert when in seen[-1], f"the stage never began ({when!r}):\n" + "".join(seen)
    time.sleep(delay_s)
    sent = time.monotonic()
    for n, signum in enumerate(signals):
        if n:
            time.sleep(between_s)
        if process.poll() is None:
            process.send_signal(signum)
    rest = process.communicate(timeout=START_S)[1]
    ended = Ended(process.returncode, time.monotonic() - sent, "".join(seen) + rest)
    print(f"{' '.join(args[:2])}: exit {ended.returncode} {ended.after_s:.2f} s after the signal")  # shown with -s
    return ended


def assert_clean(ended: Ended) -> None:
    for bad in ("Traceback", "Exception ignored", "Aborted!", "Segmentation", "core dumped"):
        assert bad not in ended.stderr, ended.stderr
