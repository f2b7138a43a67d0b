"""Operator settings: environment variables, ``ORACLE_HOME`` and ``oracle.toml``.

Every setting is a row of one table, :data:`oracle_core.settings.table.SETTINGS`.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from oracle_core.errors import ConfigError, SurfaceError
from oracle_core.settings.approvals import ApprovalRules, read_approvals
from oracle_core.settings.budgets import Budgets, read_budgets
from oracle_core.settings.environment import read_settings
from oracle_core.settings.home import default_home as default_home
from oracle_core.settings.model_tables import (
    EVERY_MODEL,
    ModelCallSettings,
    merged,
    read_model_tables,
)
from oracle_core.settings.plugin_tables import plain_plugin_config, plugin_overrides
from oracle_core.settings.reading import read_config
from oracle_core.settings.run_limits import run_limits
from oracle_core.settings.servers import server_url
from oracle_core.settings.sync_tools import SyncToolShares, read_shares
from oracle_core.settings.table import DEFAULT_HOOK_TIMEOUT as DEFAULT_HOOK_TIMEOUT
from oracle_core.settings.table import DEFAULT_LIST_LIMIT as DEFAULT_LIST_LIMIT
from oracle_core.settings.table import DEFAULT_SLOW_IMPORT_SECONDS as DEFAULT_SLOW_IMPORT_SECONDS
from oracle_core.settings.table import DEFAULT_TIER1_BUDGET as DEFAULT_TIER1_BUDGET
from oracle_core.settings.table import MODEL_CLIENTS as MODEL_CLIENTS
from oracle_core.settings.table import by_variable, of_owner
from oracle_core.settings.table_runs import DEFAULT_RESUME_MAX_AGE as DEFAULT_RESUME_MAX_AGE
from oracle_core.values.limits import RunLimits

_API_BASE = "api_base"
"""Checked after the overrides: ``--api-base`` wins over a bad ``ORACLE_API_BASE``."""


@dataclass(frozen=True)
class Settings:
    """Everything an operator configures, read from the environment by :meth:`from_env`.

    Each field is a row of the settings table (:mod:`oracle_core.settings.table`), which
    holds its variable, default and meaning; a test keeps the field defaults equal to it.

    Attributes:
        home: ``ORACLE_HOME``; holds ``oracle.db`` and ``oracle.toml``.
        model: ``ORACLE_MODEL``, a litellm model string, or ``demo`` for the offline
            stand-in (``None``: no model configured; ``oracle ask`` and ``oracle chat``
            refuse to run, an :class:`~oracle_core.Oracle` built in code uses the stand-in).
        api_base: ``ORACLE_API_BASE``, the model server's base URL.
        api_key: ``ORACLE_API_KEY``, the key for the model server (default: the provider's
            own variable, such as ``OPENAI_API_KEY``); never shown.
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
            when ``oracle-core-runtime[search]`` is installed).
        embedding_api_base: ``ORACLE_EMBEDDING_API_BASE``, its server (default ``api_base``).
        run_limits: how far a run may go (``ORACLE_MAX_STEPS``, ``ORACLE_TOOL_CONCURRENCY``,
            ``ORACLE_TOOL_TIMEOUT``, ``ORACLE_MAX_RESULT_BYTES``, ``ORACLE_MAX_TEXT_BYTES``,
            ``ORACLE_RUN_TIMEOUT``, ``ORACLE_SYNC_TOOL_WORKERS``, ``ORACLE_BUSY_WAIT``,
            ``ORACLE_LEASE_TTL``; the usage limits ``ORACLE_MAX_REQUESTS``,
            ``ORACLE_MAX_INPUT_TOKENS``, ``ORACLE_MAX_OUTPUT_TOKENS``,
            ``ORACLE_MAX_TOTAL_TOKENS``, ``ORACLE_MAX_TOOL_CALLS``, ``ORACLE_MAX_COST``).
        sync_tool_share: ``ORACLE_SYNC_TOOL_SHARE``, the sync-tool workers one plugin's
            calls may hold at once (``None``: ``share`` of ``[sync_tools]`` in
            ``oracle.toml``, else half the pool); see :meth:`sync_tool_shares`.
        slow_import_seconds: ``ORACLE_SLOW_IMPORT_SECONDS``, seconds a plugin's import may
            take before the start logs a warning naming it and ``oracle plugins`` lists it.
        database_url: ``ORACLE_DATABASE_URL``, a ``postgresql://`` URL: threads are kept in
            Postgres (``oracle-core-runtime[postgres]``), shared by every process using it; unset
            keeps them in SQLite at :attr:`database_path`.
        database_pool_size: ``ORACLE_DATABASE_POOL_SIZE``, connections one process opens to
            Postgres at most (default 10).
        resume_runs: ``ORACLE_RESUME_RUNS`` (default on): ``oracle serve`` resumes runs cut
            off by the end of their process; off (``0``), such a run is marked
            ``interrupted`` (docs/scale-out.md).
        resume_max_age: ``ORACLE_RESUME_MAX_AGE``, seconds since a cut-off run last saved a
            step within which it is resumed (default 3600); an older one is marked
            ``interrupted``.
        resume_concurrency: ``ORACLE_RESUME_CONCURRENCY``, cut-off runs one process
            resumes at once (default 4; each holds a run's model and tool calls).
        model_timeout: ``ORACLE_MODEL_TIMEOUT``, seconds one attempt of a model call may
            take, for every model without a ``timeout`` of its own (see
            :meth:`model_call_settings`; ``None``: the model's default, 120).
        model_retries: ``ORACLE_MODEL_RETRIES``, retries of a model call that failed in a way
            that may pass (``None``: the model's default, 2).
        max_tokens: ``ORACLE_MAX_TOKENS``, the most tokens one reply may have (``None``: the
            model's default, 4096).
    """

    home: Path = field(default_factory=default_home)
    model: str | None = None
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
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
    sync_tool_share: int | None = None
    slow_import_seconds: float = DEFAULT_SLOW_IMPORT_SECONDS
    database_url: str | None = field(default=None, repr=False)
    database_pool_size: int = 10
    resume_runs: bool = True
    resume_max_age: float = DEFAULT_RESUME_MAX_AGE
    resume_concurrency: int = 4
    model_timeout: float | None = None
    model_retries: int | None = None
    max_tokens: int | None = None
    env: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Read settings from ``env`` (default ``os.environ``); ``overrides`` win.

        Every field is read as its row of the settings table says
        (:mod:`oracle_core.settings.table`), in the table's order; the settings read
        elsewhere that the table marks ``check`` (``ORACLE_MODEL_CLIENT``) are checked first,
        so a typo fails every command, not only the first model call.

        Raises:
            ConfigError: the first variable whose value does not fit, naming it.
        """
        env = dict(os.environ if env is None else env)
        read_settings(env, of_owner("check"))
        fields = [s for s in of_owner("settings") if s.name != _API_BASE]
        values: dict[str, Any] = read_settings(env, fields)
        values[_API_BASE] = env.get("ORACLE_API_BASE") or None
        values["run_limits"] = run_limits(env)
        values["env"] = env
        values.update({k: v for k, v in overrides.items() if v is not None})
        values[_API_BASE] = server_url(values[_API_BASE], by_variable("ORACLE_API_BASE").given_as)
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
        from oracle_core.settings.unknown import log
        from oracle_core.settings.variables import unknown_variables

        for warning in unknown_variables(self.env):  # ORACLE_MODLE is named, not ignored
            log.warning("%s", warning)
        return read_config(self.config_path)

    def config_problems(self) -> list[ConfigError | SurfaceError]:
        """Every problem of ``oracle.toml``: a file that does not parse, a table or key that
        nothing reads, a bad value in any table the core reads (each table's first), as
        :mod:`oracle_core.settings.tables` finds them; empty when the file is good."""
        from oracle_core.settings.tables import config_problems

        try:
            return config_problems(self.config_path, self._config)
        except ConfigError as error:
            return [error]

    def check_config(self) -> None:
        """Check ``oracle.toml`` whole now, so a bad file fails before anything is built.

        Every table the core reads is read (``[budgets]``, ``[approvals]``, ``[surface]``,
        ...), and a table or key that nothing reads is refused with the closest known name
        (:mod:`oracle_core.settings.tables`). An ``ORACLE_*`` environment variable that
        nothing reads is logged as a warning on the ``oracle_core.settings`` logger
        (:mod:`oracle_core.settings.variables`).

        Raises:
            ConfigError: naming the file, the line, the key at fault and the fix.
            SurfaceError: ``[surface]`` is not a surface (the same, for that table).
        """
        problems = self.config_problems()
        if problems:
            raise problems[0]

    def configured_plugins(self) -> list[str]:
        """The plugins that have a ``[plugins.<name>]`` table in ``oracle.toml``, in file order."""
        return list(self._config.get("plugins", {}))

    def warn_unknown_plugins(self, known: Collection[str]) -> list[str]:
        """Log (and return) a warning for each ``[plugins.<name>]`` table naming none of the
        ``known`` plugins, with the closest known name (a plugin may have been uninstalled,
        so this is never an error)."""
        from oracle_core.settings.unknown import log, unknown_plugin_tables

        warnings = unknown_plugin_tables(self.config_path, self.configured_plugins(), known)
        for warning in warnings:
            log.warning("%s", warning)
        return warnings

    def plugin_section(self, plugin: str) -> dict[str, Any]:
        """``[plugins.<plugin>]`` of ``oracle.toml`` as written (no secrets resolved)."""
        section = self._config.get("plugins", {}).get(plugin, {})
        return dict(section) if isinstance(section, dict) else {}

    def mcp_config(self) -> dict[str, Any]:
        """The ``[mcp]`` tables of ``oracle.toml`` as written: one ``[mcp.<name>]`` per MCP
        server (read by :mod:`oracle_core.plugins.mcp.config`, see docs/mcp.md)."""
        return {"mcp": self._config.get("mcp", {})} if "mcp" in self._config else {}

    def surface_config(self) -> dict[str, Any]:
        """The ``[surface]`` table of ``oracle.toml`` (empty when there is none).

        ``kind = "catalog"`` (the default) or ``kind = "specialist"`` with
        ``tools = ["plugin.tool", ...]``; read by the oracle, see docs/surfaces.md.

        Raises:
            SurfaceError: when ``surface`` is not a table.
        """
        section = self._config.get("surface", {})
        if not isinstance(section, dict):
            from oracle_core.errors import SurfaceError

            raise SurfaceError(
                f"{self.config_path}: surface must be a table ([surface]), "
                f"not {type(section).__name__}"
            )
        return dict(section)

    def sync_tool_shares(self) -> SyncToolShares:
        """Each plugin's share of the sync-tool pool (see :mod:`oracle_core.settings.sync_tools`).

        :attr:`sync_tool_share` (``ORACLE_SYNC_TOOL_SHARE``), else ``share`` of
        ``[sync_tools]`` in ``oracle.toml``; single plugins' shares from
        ``[sync_tools.plugins]``.

        Raises:
            ConfigError: a share in ``oracle.toml`` that is not a whole number of at least 1.
        """
        section = self._config.get("sync_tools", {})
        return read_shares(section, self.sync_tool_share, self.config_path)

    def model_aliases(self) -> dict[str, str]:
        """The ``[aliases]`` table of ``oracle.toml``: short names for model strings
        (``fast = "openai/gpt-4o-mini"``), usable wherever a model is named
        (``ORACLE_MODEL``, ``--model``, ``Oracle(model=...)``).

        Raises:
            ConfigError: an alias that is not a non-empty string, or that contains ``/``
                (it could never be told from a model string), naming its line.
        """
        from oracle_core.settings.aliases import read_aliases

        return read_aliases(self.config_path, self._config)

    def resolve_model(self, model: str) -> str:
        """``model`` itself, or the model string it is an alias of (one step: an alias of
        an alias is not followed, so no chain can loop).

        Raises:
            ConfigError: ``[aliases]`` is malformed (see :meth:`model_aliases`).
        """
        return self.model_aliases().get(model, model)

    @cached_property
    def _model_tables(self) -> dict[str, dict[str, Any]]:
        return read_model_tables(
            self._config.get("models", {}), self.config_path, self.resolve_model
        )

    def model_call_settings(self, model: str | None = None) -> ModelCallSettings:
        """The model-call settings of ``model`` (a model string or an alias; ``None``: the
        defaults of every model), merged from where they may be set
        (:mod:`oracle_core.settings.model_tables`): its ``[models."<model>"]`` table of
        ``oracle.toml``, then :attr:`model_timeout`, :attr:`model_retries` and
        :attr:`max_tokens`, then ``[models."*"]``. A run's own model options win over all
        of them, call by call.

        Raises:
            ConfigError: a ``[models.<name>]`` table with an unknown key or a bad value,
                naming the file, the line, the table, the key and what would fit.
        """
        name = EVERY_MODEL if model is None else self.resolve_model(model)
        variables = {
            key: value
            for key, value in (
                ("timeout", self.model_timeout),
                ("retries", self.model_retries),
                ("max_tokens", self.max_tokens),
            )
            if value is not None
        }
        return merged(name, self._model_tables, variables)

    def approval_rules(self) -> ApprovalRules:
        """The ``[approvals]`` table of ``oracle.toml``, checked: ``tools`` (calls that need a
        person's approval) and ``deadline`` (seconds); see docs/waits.md.

        Raises:
            ApprovalConfigError: naming the file, the line, the key and the fix.
        """
        return read_approvals(self.config_path, self._config)

    def budgets(self) -> Budgets:
        """The ``[budgets]`` table of ``oracle.toml``, checked:
        ``<scope>_<window>_<measure> = <limit>`` and ``hold_seconds``; see docs/usage.md.

        Raises:
            ConfigError: naming the file, the line, the key and the fix.
        """
        return read_budgets(self.config_path, self._config)

    @cached_property
    def plugin_overrides(self) -> dict[str, str]:
        """The ``ORACLE_PLUGIN_<NAME>__<KEY>`` variables of :attr:`env`, picked out once for
        every plugin's configuration (see :func:`~oracle_core.settings.plugin_tables.plugin_overrides`)."""
        return plugin_overrides(self.env)

    def plugin_config(self, plugin: str) -> dict[str, Any]:
        """The configuration of one plugin, as a plain dict (see :mod:`oracle_core.settings.plugin_tables`).

        Read from ``[plugins.<plugin>]`` in ``oracle.toml``; a value written as
        ``"$VAR"`` or ``{ "$env" = "VAR" }`` is read from the environment variable ``VAR``
        (for secrets); ``ORACLE_PLUGIN_<PLUGIN>__<KEY>`` (upper case, ``-`` as ``_``, and a
        double underscore between plugin and key so ``web`` and ``web-search`` never share
        a variable) overrides ``<key>``. A plugin that declares a config model gets it
        validated at assembly instead.

        Raises:
            PluginConfigError: a ``$env`` reference names a variable that is not set.
        """
        return plain_plugin_config(
            plugin, self.plugin_section(plugin), self.env, self.plugin_overrides
        )
