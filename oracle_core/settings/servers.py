"""The servers the settings point at: the Postgres store and the model server, each checked
when the settings are read so a URL that could never work fails every command at once."""

from __future__ import annotations

from urllib.parse import urlsplit

from oracle_core.errors import ConfigError
from oracle_core.settings.reading import ENVIRONMENT


def database_url(value: str | None) -> str | None:
    """``ORACLE_DATABASE_URL`` as given (``None`` when unset or empty).

    Raises:
        ConfigError: it is not a ``postgresql://`` URL (its password never shown).
    """
    url = (value or "").strip()
    if not url:
        return None
    if not url.startswith(("postgresql://", "postgres://")):
        shown = url.split("@")[-1][:60]  # never echo a password
        raise ConfigError(
            f"ORACLE_DATABASE_URL must be a postgresql:// URL (e.g. "
            f"postgresql://user@host:5432/oracle), not one ending {shown!r}; unset it to keep "
            "threads in SQLite under ORACLE_HOME",
            source=ENVIRONMENT,
            key="ORACLE_DATABASE_URL",
            expected="a postgresql:// URL",
        )
    return url


def is_http_url(url: str) -> bool:
    """Whether ``url`` is an ``http://`` or ``https://`` URL with a host (and a port that is
    a number, if it has one)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (read for its check: a port that is no number raises)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def server_url(value: str | None, setting: str) -> str | None:
    """A model or embedding server's base URL (``None`` when unset or empty).

    Args:
        value: the URL as given.
        setting: where it was given, for the message (``ORACLE_API_BASE or --api-base``).

    Raises:
        ConfigError: it is not an ``http://`` or ``https://`` URL with a host (a scheme left
            out, ``localhost:8080``, would otherwise fail every model call with no more
            than "connection error").
    """
    url = (value or "").strip()
    if not url:
        return None
    if not is_http_url(url):
        shown = url.split("@")[-1][:80]  # never echo a password
        raise ConfigError(
            f"{setting} = {shown!r} is not an http:// or https:// URL of a server: write "
            "it with its scheme and host, such as http://localhost:8080/v1",
            source=ENVIRONMENT,
            key=setting.split()[0],
            expected="an http:// or https:// URL",
        )
    return url
