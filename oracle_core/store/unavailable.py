"""The error of a store that cannot be opened: the setting that points at it and the fix."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from oracle_core.errors import ConfigError
from oracle_core.settings.reading import ENVIRONMENT


class StoreUnavailableError(ConfigError):
    """The thread store cannot be opened: Postgres does not answer at ``ORACLE_DATABASE_URL``,
    or the SQLite file's folder (under ``ORACLE_HOME``) cannot be created or written.

    A :class:`~oracle_core.errors.ConfigError`, so the CLI prints its one line (the variable,
    what failed, the fix) and exits with status 2 instead of a driver's traceback.
    """

    def __init__(self, message: str, *, variable: str) -> None:
        super().__init__(message, source=ENVIRONMENT, key=variable)


def postgres_unreachable(where: str, error: BaseException) -> StoreUnavailableError:
    """The error for Postgres at ``where`` (host:port/db, no password) refusing to open."""
    reason = " ".join(str(error).split())[:200] or type(error).__name__
    return StoreUnavailableError(
        f"ORACLE_DATABASE_URL: cannot connect to Postgres at {where} ({reason}); start the "
        "server or fix the URL, or unset ORACLE_DATABASE_URL to keep threads in SQLite "
        "under ORACLE_HOME",
        variable="ORACLE_DATABASE_URL",
    )


def folder_unwritable(path: object, error: OSError, what: str = "the database") -> ConfigError:
    """The error for ``what`` at ``path`` (under ``ORACLE_HOME``) whose folder cannot be
    made or written."""
    reason = error.strerror or str(error)
    return StoreUnavailableError(
        f"ORACLE_HOME: cannot create {what} {path} ({reason}); set ORACLE_HOME to a "
        "folder you can write (it is created if missing)",
        variable="ORACLE_HOME",
    )


def home_write_error(error: OSError, env: Mapping[str, str]) -> ConfigError | None:
    """``error`` as the one-line error of an ``ORACLE_HOME`` that cannot be written, when it
    is about a path under it (a cache, the database); ``None`` for any other path."""
    from oracle_core.settings.home import home_from_env

    name = error.filename
    if not isinstance(name, str | Path):
        return None
    home = home_from_env(env)
    path = Path(name)
    if path != home and home not in path.parents:
        return None
    return folder_unwritable(path, error, "the folder" if path == home else "a file at")
