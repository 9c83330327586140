"""`ForwardError`: a SIEM endpoint could not be reached or refused the data after retries.

A subclass of the shared `LogwardenError`, so the CLI prints its message and exits non-zero
like every other expected failure; bad URLs and rejected tokens raise `ConfigError` instead.
It carries the `Tally` of what was sent before it (its message says it too).
"""

from __future__ import annotations

from logwarden.app.export.tally import Tally
from logwarden.errors import LogwardenError


class ForwardError(LogwardenError):
    """Sending to a SIEM failed (network, server error, rejected payload, a reset connection)."""

    def __init__(self, message: str, tally: Tally | None = None) -> None:
        super().__init__(message)
        self.tally = tally
