"""What a command needs of its settings besides a good ``oracle.toml``, checked before it
starts: a model, a store that answers, OTLP endpoints it can use.

Each failure is a :class:`~oracle_core.errors.ConfigError`: the ``oracle`` group prints its
one line, naming the setting and the fix, and exits with status 2. ``oracle serve`` asks
for a model and a store that answers before it loads a plugin (:func:`check_serving`);
``oracle config --check`` reports every one (:mod:`oracle_core.cli.config_check`).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from oracle_core.errors import ConfigError
from oracle_core.settings.reading import ENVIRONMENT
from oracle_core.settings.servers import is_http_url

if TYPE_CHECKING:
    from oracle_core.settings import Settings

NO_MODEL = (
    "no model is configured: set ORACLE_MODEL (for example openai/gpt-4o-mini, or any litellm "
    "model string) or pass --model; --model demo runs the offline scripted stand-in"
)
"""What ``ask``, ``chat`` and ``serve`` say when there is no model to talk to."""

STORE_TIMEOUT = 5.0
"""Seconds the store may take to answer the check before a command starts."""

OTLP_VARIABLES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)
"""The OpenTelemetry SDK's variables naming where OTLP data is sent."""

OTLP_REACH_TIMEOUT = 1.0
"""Seconds ``oracle config --check`` waits for an OTLP collector to accept a connection."""


def load_settings(**overrides: Any) -> Settings:
    """The settings from the environment (``overrides`` win), checked whole as every command
    reads them: every table and key of ``oracle.toml`` (:meth:`Settings.check_config`), the
    ``ORACLE_*`` values, and the OTLP endpoints.

    Raises:
        ConfigError: a bad environment value or a bad ``oracle.toml`` (the ``oracle`` group
            prints it in one line and exits with status 2).
        SurfaceError: a bad ``[surface]`` table (the same).
    """
    from oracle_core.settings import Settings

    settings = Settings.from_env(**overrides)
    settings.check_config()
    otlp_endpoints(settings.env)
    return settings


def require_model(settings: Settings) -> None:
    """Refuse a command that talks to a model when none is configured.

    Raises:
        ConfigError: naming ``ORACLE_MODEL``, ``--model`` and ``--model demo``.
    """
    if not settings.model:
        raise ConfigError(NO_MODEL, source=ENVIRONMENT, key="ORACLE_MODEL", expected="a model")


def check_store(settings: Settings, timeout: float = STORE_TIMEOUT) -> None:
    """Open the store the settings point at, ask it one query and close it.

    Raises:
        StoreUnavailableError: it does not answer (Postgres down, ``ORACLE_HOME`` that
            cannot be written), naming the setting and the fix.
        ImportError: ``ORACLE_DATABASE_URL`` is set without the ``postgres`` extra.
    """
    from oracle_core.store.opening import open_store

    async def ping() -> None:
        store = open_store(settings.database_url, settings.database_path, pool_size=1)
        try:
            await store.ping(timeout)
        finally:
            await store.close()

    asyncio.run(ping())


def otlp_endpoints(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """The OTLP endpoints ``env`` sets, as ``(variable, url)`` (none while
    ``OTEL_SDK_DISABLED=true``).

    Raises:
        ConfigError: an endpoint that is not an ``http://`` or ``https://`` URL with a host
            (the SDK would drop every span at export, saying so only in its own log).
    """
    if (env.get("OTEL_SDK_DISABLED") or "").strip().lower() == "true":
        return []
    found = []
    for variable in OTLP_VARIABLES:
        url = (env.get(variable) or "").strip()
        if not url:
            continue
        if not is_http_url(url):
            raise ConfigError(
                f"{variable}={url[:80]!r} in the environment is not an OTLP/HTTP endpoint: "
                "write an http:// or https:// URL with its host, such as "
                "http://localhost:4318, or unset it",
                source=ENVIRONMENT,
                key=variable,
                expected="an http:// or https:// URL",
            )
        found.append((variable, url))
    return found


def unreachable_otlp(env: Mapping[str, str], timeout: float = OTLP_REACH_TIMEOUT) -> list[str]:
    """One sentence for each OTLP endpoint of ``env`` where nothing accepts a connection
    within ``timeout`` seconds (its spans would be lost, and the process wait for them at
    exit)."""
    said = []
    for variable, url in otlp_endpoints(env):
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as error:
            reason = error.strerror or type(error).__name__
            said.append(
                f"{variable}: nothing answers at {host}:{port} ({reason}); start the "
                f"collector or fix {variable}, or unset it (traces sent there are lost)"
            )
    return said


def check_serving(settings: Settings) -> None:
    """Check what ``oracle serve`` needs beyond a good ``oracle.toml`` (read by then): a
    model, and a store that answers; before a plugin is loaded.

    Raises:
        ConfigError: the first setting at fault, in one line with its fix.
    """
    require_model(settings)
    check_store(settings)
