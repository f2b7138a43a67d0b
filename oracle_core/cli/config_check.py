"""``oracle config --check``: every setting read and everything it points at tried, one line
each, exit status 2 when anything would stop a command.

What is checked, in order: ``oracle.toml`` (every table and key: the first problem of each
table, and every unknown name), the environment (every bad value, each variable read as its
row of the settings table says; ``ORACLE_*`` names nothing reads are warnings, since other
software sets such variables too), the OTLP endpoints (a URL that is none is an error; a
collector that does not answer, a warning), the store (opened and asked one query), the
model (none configured is a warning: ``ask``, ``chat`` and ``serve`` refuse to run, the
other commands need none), and the plugins (a ``[plugins.<name>]`` or ``[mcp.<name>]``
table its plugin refuses is an error; any other plugin failure, and a table
of a plugin that is not installed, a warning).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from oracle_core.cli.checks import check_store, otlp_endpoints, unreachable_otlp
from oracle_core.cli.common import redact_url
from oracle_core.cli.extras import extra_for, missing_extra_message
from oracle_core.errors import ConfigError, PluginConfigError

if TYPE_CHECKING:
    from oracle_core.settings import Settings

Level = Literal["ok", "warning", "error"]


@dataclass(frozen=True)
class Finding:
    """One line of the check.

    Attributes:
        level: ``ok``, ``warning`` (the commands go on) or ``error`` (a command stops).
        subject: what was checked (``oracle.toml``, ``store``, ``model``, ...).
        message: what was found, and the fix when something is wrong.
    """

    level: Level
    subject: str
    message: str

    def line(self) -> str:
        """The finding as ``oracle config --check`` prints it."""
        return f"{self.level:<8} {self.subject}: {self.message}"


@contextmanager
def _warnings_kept(kept: list[str]) -> Iterator[None]:
    """Keep what the ``oracle_core`` loggers warn about meanwhile in ``kept``, unprinted."""

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            kept.append(record.getMessage())

    logger = logging.getLogger("oracle_core")
    handler = Keep(logging.WARNING)
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def check_everything() -> list[Finding]:
    """Every finding of the check of the environment's settings, in the order of the
    module's docs."""
    from oracle_core.settings import Settings

    findings: list[Finding] = []
    kept: list[str] = []
    with _warnings_kept(kept):
        try:
            settings = Settings.from_env()
        except ConfigError as error:
            return [Finding("error", "environment", str(e)) for e in _bad_variables(error)]
        problems = settings.config_problems()
        where = str(settings.config_path)
        for problem in problems:
            findings.append(Finding("error", "oracle.toml", str(problem)))
        if not problems:
            exists = settings.config_path.exists()
            findings.append(Finding("ok", "oracle.toml", where if exists else f"{where} (none)"))
        findings += [Finding("warning", "environment", warning) for warning in kept]
        kept.clear()
        findings += _otlp(settings)
        findings += _store(settings)
        findings += _model(settings)
        if not problems:  # plugins read their tables once the file is good
            findings += _plugins(settings, kept)
    return findings


def _bad_variables(first: ConfigError) -> list[ConfigError]:
    """``first``, the error that stopped the settings, then every other variable of the
    environment that does not fit its row of the settings table."""
    from oracle_core.settings.environment import environment_problems

    others = [e for e in environment_problems(os.environ) if e.key != first.key]
    return [first, *others]


def _otlp(settings: Settings) -> list[Finding]:
    try:
        endpoints = otlp_endpoints(settings.env)
    except ConfigError as error:
        return [Finding("error", "traces", str(error))]
    found = [Finding("warning", "traces", said) for said in unreachable_otlp(settings.env)]
    if endpoints and not found:
        shown = ", ".join(f"{variable}={url}" for variable, url in endpoints)
        found.append(Finding("ok", "traces", f"a collector answers at {shown}"))
    return found


def _store(settings: Settings) -> list[Finding]:
    shown = (
        f"postgres {redact_url(settings.database_url)}"
        if settings.database_url
        else f"sqlite {settings.database_path}"
    )
    try:
        check_store(settings)
    except ConfigError as error:
        return [Finding("error", "store", str(error))]
    except ImportError as error:
        if extra_for(error) is None:
            raise
        return [Finding("error", "store", missing_extra_message(error, "config"))]
    return [Finding("ok", "store", f"{shown} answers")]


def _model(settings: Settings) -> list[Finding]:
    from oracle_core.cli.checks import NO_MODEL

    if not settings.model:
        return [Finding("warning", "model", f"{NO_MODEL} (ask, chat and serve refuse to run)")]
    try:
        model = settings.resolve_model(settings.model)
    except ConfigError as error:
        return [Finding("error", "model", str(error))]
    alias = f" (the alias {settings.model})" if model != settings.model else ""
    base = f" at {settings.api_base}" if settings.api_base else ""
    return [Finding("ok", "model", f"{model}{alias}{base}")]


def _plugins(settings: Settings, kept: list[str]) -> list[Finding]:
    from oracle_core.capabilities.surface import Catalog, config_problem
    from oracle_core.errors import PluginError, StrictPluginError
    from oracle_core.oracle import Oracle

    failures: list[PluginError]
    try:  # the catalog, so a [surface] naming a failed plugin's tool lets the rest show
        oracle = Oracle(settings=settings, model="demo", surface=Catalog())
    except StrictPluginError as error:
        failures, registry = error.failures, None
    else:
        failures, registry = list(oracle.registry.failures), oracle.registry
        oracle.close_sync()
    findings = [
        Finding("error" if isinstance(failure, PluginConfigError) else "warning", "plugins",
                f"{failure.plugin}: {failure}")
        for failure in failures
    ]  # fmt: skip
    findings += [Finding("warning", "plugins", said) for said in kept]
    if registry is None:
        return findings
    surface = config_problem(settings, registry)
    if surface is not None:
        findings.append(Finding("error", "surface", surface))
    if not any(f.level == "error" for f in findings):
        names = ", ".join(p.name for p in registry) or "none"
        findings.append(Finding("ok", "plugins", f"{len(registry)} loaded: {names}"))
    return findings
