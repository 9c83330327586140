"""`ForwardError`: a SIEM endpoint could not be reached or refused the data after retries.

A subclass of the shared `LogwardenError`, so the CLI prints its message and exits non-zero
like every other expected failure; bad URLs and rejected tokens raise `ConfigError` instead.
"""

from __future__ import annotations

from logwarden.errors import LogwardenError


class ForwardError(LogwardenError):
    """Sending to a SIEM failed (network, server error, rejected payload)."""
