"""Domain exceptions. Deep code raises these with a message that says how to fix the problem;
the CLI prints the message and exits non-zero (no traceback for expected failures)."""


class LogwardenError(Exception):
    """Base class: an expected failure with a user-facing message."""

    exit_code = 1


class InputError(LogwardenError):
    """A path, file or argument the user gave cannot be used."""

    exit_code = 2


class ConfigError(LogwardenError):
    """Bad configuration (settings, env vars, options)."""

    exit_code = 2


class ModelError(LogwardenError):
    """The model is missing, corrupt (hash mismatch) or failed to load/generate."""


class EngineTimeout(ModelError):
    """Generation took longer than allowed."""


class StoreError(LogwardenError):
    """The database cannot be opened, migrated or written."""


class StoreInputError(StoreError):
    """The database given (`--db`, `LOGWARDEN_DB`) cannot be used as it is: a bad URL, a missing
    driver, a file that is not a database or is damaged, a folder that cannot be created."""

    exit_code = 2


class RunStopped(LogwardenError):
    """A run was asked to stop (a signal, the UI): what was finished is committed, the work that
    waited for the model is left for the next run (`--resume`)."""

    exit_code = 130
