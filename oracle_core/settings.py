"""Operator settings: environment variables, ``ORACLE_HOME`` and ``oracle.toml``."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from oracle_core.run.limits import RunLimits

DEFAULT_TIER1_BUDGET = 400
"""Tokens the Tier-1 block may cost before a warning names the most expensive plugins."""

DEFAULT_LIST_LIMIT = 40
"""Plugins ``list_capabilities()`` lists one by one; past it, categories and a hint to search."""

DEFAULT_HOOK_TIMEOUT = 10.0
"""Seconds one plugin hook may take (assembly, startup, shutdown) before it counts as hung."""


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _list_limit(value: str | None) -> int:
    if not value:
        return DEFAULT_LIST_LIMIT
    try:
        limit = int(value)
    except ValueError:
        limit = 0
    if limit < 1:
        raise ValueError(
            f"ORACLE_LIST_LIMIT must be a whole number of plugins, at least 1, not {value!r} "
            f"(unset it for the default of {DEFAULT_LIST_LIMIT})"
        )
    return limit


def _names(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip())


_RUN_LIMIT_VARIABLES: tuple[tuple[str, str, type], ...] = (
    ("ORACLE_MAX_STEPS", "max_steps", int),
    ("ORACLE_TOOL_CONCURRENCY", "tool_concurrency", int),
    ("ORACLE_TOOL_TIMEOUT", "tool_timeout", float),
    ("ORACLE_MAX_RESULT_BYTES", "max_result_bytes", int),
    ("ORACLE_MAX_TEXT_BYTES", "max_text_bytes", int),
    ("ORACLE_RUN_TIMEOUT", "run_timeout", float),
    ("ORACLE_SYNC_TOOL_WORKERS", "sync_tool_workers", int),
    ("ORACLE_BUSY_WAIT", "busy_wait", float),
)
"""The environment variables that set :class:`~oracle_core.run.limits.RunLimits` fields."""


def _run_limits(env: Mapping[str, str]) -> RunLimits:
    values: dict[str, Any] = {}
    for variable, name, kind in _RUN_LIMIT_VARIABLES:
        raw = (env.get(variable) or "").strip()
        if not raw:
            continue
        try:
            values[name] = kind(raw)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise ValueError(f"{variable} must be {what}, not {raw!r}") from None
    try:
        return RunLimits(**values)
    except ValueError as error:
        variable = next((v for v, n, _ in _RUN_LIMIT_VARIABLES if str(error).startswith(n)), "")
        raise ValueError(f"{variable}: {error}" if variable else str(error)) from None


def default_home() -> Path:
    """The platform's user data folder for ``oracle`` (used when ``ORACLE_HOME`` is unset)."""
    from platformdirs import user_data_path

    return user_data_path("oracle", appauthor=False)


@dataclass(frozen=True)
class Settings:
    """Everything an operator configures, read from the environment by :meth:`from_env`.

    Attributes:
        home: ``ORACLE_HOME``; holds ``oracle.db`` and ``oracle.toml``.
        model: ``ORACLE_MODEL``, a litellm model string (``None``: the built-in demo model).
        api_base: ``ORACLE_API_BASE``, the model server's base URL.
        load_plugins: ``ORACLE_LOAD_PLUGINS`` as names; ``None`` loads every installed plugin,
            an empty tuple loads none.
        disable_plugins: ``ORACLE_DISABLE_PLUGINS`` as names.
        strict: ``ORACLE_STRICT_PLUGINS=1``: any plugin failure is fatal.
        tier1_budget: ``ORACLE_TIER1_BUDGET``, tokens the Tier-1 block may cost.
        trace_plugins: ``ORACLE_TRACE_PLUGINS=1`` prints every hook call to stderr.
        hook_timeout: ``ORACLE_HOOK_TIMEOUT``, seconds one plugin hook may take; a hook
            that takes longer is reported as a failure of its plugin, which is left out.
        list_limit: ``ORACLE_LIST_LIMIT``, the most plugins ``list_capabilities`` lists at
            once; a larger catalog is shown as categories, one category a page.
        embedding_model: ``ORACLE_EMBEDDING_MODEL``, a litellm embedding model for the
            semantic ranker of capability search (``none``: lexical only; unset: wordllama
            when ``oracle-core[search]`` is installed).
        embedding_api_base: ``ORACLE_EMBEDDING_API_BASE``, its server (default ``api_base``).
        run_limits: how far a run may go (``ORACLE_MAX_STEPS``, ``ORACLE_TOOL_CONCURRENCY``,
            ``ORACLE_TOOL_TIMEOUT``, ``ORACLE_MAX_RESULT_BYTES``, ``ORACLE_MAX_TEXT_BYTES``,
            ``ORACLE_RUN_TIMEOUT``, ``ORACLE_SYNC_TOOL_WORKERS``, ``ORACLE_BUSY_WAIT``).
    """

    home: Path = field(default_factory=default_home)
    model: str | None = None
    api_base: str | None = None
    load_plugins: tuple[str, ...] | None = None
    disable_plugins: tuple[str, ...] = ()
    strict: bool = False
    tier1_budget: int = DEFAULT_TIER1_BUDGET
    trace_plugins: bool = False
    hook_timeout: float = DEFAULT_HOOK_TIMEOUT
    list_limit: int = DEFAULT_LIST_LIMIT
    embedding_model: str | None = None
    embedding_api_base: str | None = None
    run_limits: RunLimits = field(default_factory=RunLimits)
    env: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Read settings from ``env`` (default ``os.environ``); ``overrides`` win."""
        env = dict(os.environ if env is None else env)
        home = env.get("ORACLE_HOME")
        values: dict[str, Any] = {
            "home": Path(home).expanduser() if home else default_home(),
            "model": env.get("ORACLE_MODEL") or None,
            "api_base": env.get("ORACLE_API_BASE") or None,
            "load_plugins": _names(env.get("ORACLE_LOAD_PLUGINS")),
            "disable_plugins": _names(env.get("ORACLE_DISABLE_PLUGINS")) or (),
            "strict": _flag(env.get("ORACLE_STRICT_PLUGINS")),
            "tier1_budget": int(env.get("ORACLE_TIER1_BUDGET") or DEFAULT_TIER1_BUDGET),
            "trace_plugins": _flag(env.get("ORACLE_TRACE_PLUGINS")),
            "hook_timeout": float(env.get("ORACLE_HOOK_TIMEOUT") or DEFAULT_HOOK_TIMEOUT),
            "list_limit": _list_limit(env.get("ORACLE_LIST_LIMIT")),
            "embedding_model": env.get("ORACLE_EMBEDDING_MODEL") or None,
            "embedding_api_base": env.get("ORACLE_EMBEDDING_API_BASE") or None,
            "run_limits": _run_limits(env),
            "env": env,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @property
    def database_path(self) -> Path:
        """The SQLite database file, ``$ORACLE_HOME/oracle.db``."""
        return self.home / "oracle.db"

    @property
    def config_path(self) -> Path:
        """The configuration file, ``$ORACLE_HOME/oracle.toml``."""
        return self.home / "oracle.toml"

    @cached_property
    def _config(self) -> dict[str, Any]:
        try:
            with self.config_path.open("rb") as handle:
                return tomllib.load(handle)
        except FileNotFoundError:
            return {}
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"{self.config_path} is not valid TOML: {error}") from None

    def plugin_config(self, plugin: str) -> dict[str, Any]:
        """The configuration of one plugin.

        Read from ``[plugins.<plugin>]`` in ``oracle.toml``; a value written as
        ``{ "$env" = "VAR" }`` is read from the environment variable ``VAR`` (for secrets);
        ``ORACLE_PLUGIN_<PLUGIN>__<KEY>`` (upper case, ``-`` as ``_``, and a double
        underscore between plugin and key so ``web`` and ``web-search`` never share a
        variable) overrides ``<key>``.
        """
        section = dict(self._config.get("plugins", {}).get(plugin, {}))
        resolved: dict[str, Any] = {}
        for key, value in section.items():
            if isinstance(value, dict) and set(value) == {"$env"}:
                resolved[key] = self.env.get(str(value["$env"]))
            else:
                resolved[key] = value
        prefix = f"ORACLE_PLUGIN_{plugin.upper().replace('-', '_')}__"
        for name, value in self.env.items():
            if name.startswith(prefix):
                resolved[name.removeprefix(prefix).lower()] = value
        return resolved
