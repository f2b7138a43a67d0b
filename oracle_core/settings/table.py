"""The one table of operator settings: every setting's name, environment variable,
``oracle.toml`` key, type, default and help, in one ordered tuple, :data:`SETTINGS`.

Everything else reads it: the loader (:meth:`Settings.from_env
<oracle_core.settings.Settings.from_env>`, through :mod:`oracle_core.settings.environment`),
the run limits and model-call defaults, the check of ``ORACLE_*`` names nothing reads
(:mod:`oracle_core.settings.variables`), the check of ``oracle.toml``'s top-level names
(:mod:`oracle_core.settings.unknown`), ``oracle config``, and the settings table of
docs/operators.md (:mod:`oracle_core.settings.docs` writes it, a test keeps it equal). A new
setting is one row here.

The table has two parts, in this order: the top-level tables of ``oracle.toml`` (in the
order messages list them), then the environment variables (in the order docs/operators.md
lists them).
"""

from __future__ import annotations

from oracle_core.settings.setting import Kind, Setting
from oracle_core.settings.table_runs import RUN_SETTINGS
from oracle_core.settings.table_serving import SERVING_SETTINGS

DEFAULT_TIER1_BUDGET = 400
"""Tokens the Tier-1 block may cost before a warning names the most expensive plugins."""

DEFAULT_LIST_LIMIT = 40
"""Plugins ``list_capabilities()`` lists one by one; past it, categories and a hint to search."""

DEFAULT_HOOK_TIMEOUT = 10.0
"""Seconds one plugin hook may take (assembly, startup, shutdown) before it counts as hung."""

MODEL_CLIENTS = ("auto", "litellm")
"""The values of ``ORACLE_MODEL_CLIENT`` (read again, with the same choices, by
:func:`~oracle_core.models.openai.model_for`); any other is an error when settings are read."""

DEFAULT_SLOW_IMPORT_SECONDS = 0.5
"""Seconds a plugin's import may take before the start warns and ``oracle plugins`` says so."""


def _table(name: str, help: str, kind: Kind = "table") -> Setting:
    return Setting(name, help, toml=name, kind=kind, owner="oracle.toml", page=None)


_HEAD: tuple[Setting, ...] = (
    # The tables of oracle.toml, in the order messages list them.
    _table("plugins", "[plugins.<name>]: a plugin's settings, its to check", "tables"),
    _table("mcp", "[mcp.<name>]: an MCP server (docs/mcp.md)", "tables"),
    _table("models", "[models.<name>]: model-call settings (docs/models.md)", "tables"),
    _table("surface", "[surface]: what the model is shown (docs/surfaces.md)"),
    _table("approvals", "[approvals]: calls that wait for a person (docs/waits.md)"),
    _table("sync_tools", "[sync_tools]: sync-tool threads per plugin"),
    _table("budgets", "[budgets]: spending per user and thread (docs/usage.md)"),
    _table("aliases", "[aliases]: short names for model strings (docs/models.md)"),
    # The environment, in the order docs/operators.md lists it.
    Setting(
        "home",
        "a relative path is taken from the current folder once, when the settings are read "
        "(`oracle config` shows it in full); holds `oracle.db` (SQLite store), `oracle.toml`, "
        "and two caches safe to delete at any time: `cache/` (validated manifests and tool "
        "schemas of installed plugins, so a warm start skips them; the installed plugins' "
        "entry points; the Tier-1 block's token count) and `search/` (the capability search "
        "index)",
        "ORACLE_HOME",
        kind="path",
        shown_default="the platform's user data folder for `oracle`",
    ),
    Setting(
        "model",
        "any [litellm model string](https://docs.litellm.ai/docs/providers), e.g. "
        "`openai/gpt-4o-mini`; `demo`: the built-in offline stand-in (`oracle demo` uses it "
        "when unset)",
        "ORACLE_MODEL",
        option="--model",
        shown_default="unset: no model; `oracle ask`, `oracle chat` and `oracle serve` stop "
        "and say how to set one (exit 2)",
    ),
    Setting(
        "api_base",
        "base URL of the model server (self-hosted, OpenAI-compatible): an `http://` or "
        "`https://` URL with its host (`localhost:8080` without a scheme stops every command, "
        "saying so)",
        "ORACLE_API_BASE",
        option="--api-base",
        kind="url",
        shown_default="the provider's",
    ),
    Setting(
        "api_key",
        "the model server's API key (`--api-key`); never printed (`oracle config` says only "
        "whether one is set)",
        "ORACLE_API_KEY",
        option="--api-key",
        kind="secret",
        shown_default="the provider's own variable (`OPENAI_API_KEY`, ...)",
    ),
    Setting(
        "model_client",
        "`auto`: `openai/...` models on the direct path (plain HTTP, no litellm), every other "
        "model through litellm; `litellm`: every model through litellm (see "
        "[Model clients](#model-clients))",
        "ORACLE_MODEL_CLIENT",
        kind="choice",
        default="auto",
        owner="check",
        choices=MODEL_CLIENTS,
    ),
    Setting(
        "model_timeout",
        "seconds one attempt of a model call may take, for every model without a `timeout` "
        'of its own in `[models."<model>"]`; `--timeout` sets one run\'s (see '
        "[models.md](models.md#model-call-settings))",
        "ORACLE_MODEL_TIMEOUT",
        'models."*".timeout',
        kind="float",
        shown_default='`120` (else `timeout` of `[models."*"]`)',
        unit="seconds",
        positive=True,
    ),
    Setting(
        "model_retries",
        "retries of a model call that failed in a way that may pass (a timeout, a lost "
        "connection, 408, 409, 429, 5xx), for every model without `retries` of its own; "
        "`--retries` sets one run's",
        "ORACLE_MODEL_RETRIES",
        'models."*".retries',
        kind="int",
        shown_default='`2` (else `retries` of `[models."*"]`)',
        unit="retries",
        minimum=0,
    ),
    Setting(
        "max_tokens",
        "the most tokens one model reply may have, sent as `max_tokens` with every call (so "
        "a local model that does not stop cannot run until its context is full), for every "
        "model without `max_tokens` of its own; `--max-tokens` sets one run's. Not "
        "`ORACLE_MAX_OUTPUT_TOKENS`, a whole run's limit",
        "ORACLE_MAX_TOKENS",
        'models."*".max_tokens',
        kind="int",
        shown_default='`4096` (else `max_tokens` of `[models."*"]`)',
        unit="tokens",
        minimum=1,
    ),
    Setting(
        "load_plugins",
        "comma list of entry point or distribution names; empty string: none. A name no "
        "installed plugin has is reported as a plugin left out, with the nearest name "
        "(`did you mean 'weather'?`)",
        "ORACLE_LOAD_PLUGINS",
        kind="names",
        shown_default="unset: every installed plugin",
    ),
    Setting(
        "disable_plugins",
        "comma list of names to leave out (never imported); a name that matches no installed "
        "plugin nor MCP server disables nothing and is a warning with the nearest name",
        "ORACLE_DISABLE_PLUGINS",
        kind="names",
        default=(),
        shown_default="empty",
    ),
    Setting(
        "strict",
        "`1`: any plugin failure is fatal (non-zero exit naming the plugin)",
        "ORACLE_STRICT_PLUGINS",
        kind="flag",
        default=False,
    ),
    Setting(
        "tier1_budget",
        "tokens the Tier-1 block may cost before a warning",
        "ORACLE_TIER1_BUDGET",
        kind="int",
        default=DEFAULT_TIER1_BUDGET,
        unit="tokens",
        minimum=0,
    ),
    Setting(
        "trace_plugins",
        "`1`: print every hook call and its plugin to stderr "
        "(`oracle: hook oracle_tools -> weather`)",
        "ORACLE_TRACE_PLUGINS",
        kind="flag",
        default=False,
    ),
    Setting(
        "trace_content",
        "`1`: put messages, tool arguments and results in OpenTelemetry spans "
        "([observability.md](observability.md)); connection secrets never",
        "ORACLE_TRACE_CONTENT",
        kind="flag",
        default=False,
        owner="telemetry",
    ),
    Setting(
        "hook_timeout",
        "seconds one plugin import or hook may take (assembly, startup, shutdown); a plugin "
        "whose import or hook overruns is reported and left out",
        "ORACLE_HOOK_TIMEOUT",
        kind="float",
        default=DEFAULT_HOOK_TIMEOUT,
        unit="seconds",
        positive=True,
    ),
    Setting(
        "slow_import_seconds",
        "seconds a plugin's import may take before the start logs a one-line warning naming "
        'it and `oracle plugins` lists it under "Slow imports" (one past '
        "`ORACLE_HOOK_TIMEOUT` is cut off: see [Plugin failures](#plugin-failures))",
        "ORACLE_SLOW_IMPORT_SECONDS",
        kind="float",
        default=DEFAULT_SLOW_IMPORT_SECONDS,
        unit="seconds",
        minimum=0,
    ),
)

_CAPABILITIES: tuple[Setting, ...] = (
    Setting(
        "list_limit",
        "most plugins `list_capabilities()` lists one by one; a larger catalog is shown as "
        "categories with counts (one category a page) and the model is pointed to the search "
        "meta-tool",
        "ORACLE_LIST_LIMIT",
        kind="int",
        default=DEFAULT_LIST_LIMIT,
        unit="plugins",
        minimum=1,
    ),
    Setting(
        "embedding_model",
        "a litellm embedding model for the semantic ranker of capability search, e.g. "
        "`openai/text-embedding-3-small`; `none`: lexical only. See [search.md](search.md)",
        "ORACLE_EMBEDDING_MODEL",
        shown_default="unset: `wordllama` (a core dependency: its vectors ship in its wheel, "
        "nothing is downloaded)",
    ),
    Setting(
        "embedding_api_base",
        "base URL of that embedding model's server",
        "ORACLE_EMBEDDING_API_BASE",
        kind="url",
        shown_default="`ORACLE_API_BASE`",
    ),
)

SETTINGS: tuple[Setting, ...] = (*_HEAD, *RUN_SETTINGS, *_CAPABILITIES, *SERVING_SETTINGS)
"""Every operator setting, in order: the tables of ``oracle.toml``, then the environment
variables as docs/operators.md lists them, then those other pages list."""


TABLES_OF_TABLES: tuple[str, ...] = tuple(s.name for s in SETTINGS if s.kind == "tables")
"""Top-level keys of ``oracle.toml`` whose every entry is a table (``[plugins.<name>]``)."""

TABLES: tuple[str, ...] = tuple(s.name for s in SETTINGS if s.kind == "table")
"""Top-level keys of ``oracle.toml`` that are one table."""


def of_owner(*owners: str) -> tuple[Setting, ...]:
    """The settings read by ``owners`` (see :data:`~oracle_core.settings.setting.Owner`), in
    table order."""
    return tuple(setting for setting in SETTINGS if setting.owner in owners)


def by_variable(variable: str) -> Setting:
    """The setting of the environment variable ``variable``.

    Raises:
        KeyError: no setting has that variable.
    """
    for setting in SETTINGS:
        if setting.variable == variable:
            return setting
    raise KeyError(variable)
