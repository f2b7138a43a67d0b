"""Typed errors raised by oracle-core.

Every error that concerns a plugin carries the plugin's name, and its message says what is
wrong and how to fix it, so an operator can act on the message alone.
"""

from __future__ import annotations

from collections.abc import Sequence


class OracleError(Exception):
    """Base class of every error oracle-core raises on purpose."""


class PluginError(OracleError):
    """A plugin could not be used.

    Attributes:
        plugin: the plugin's name (its manifest name, else its entry point name).
        distribution: the distribution that ships it, when it came from an entry point.
        problems: every problem found, each a sentence naming what is wrong and the fix;
            the message lists them all (a single problem is the message itself).
    """

    def __init__(
        self,
        message: str,
        *,
        plugin: str,
        distribution: str | None = None,
        problems: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.distribution = distribution
        self.problems = list(problems) or [message]


class PluginLoadError(PluginError):
    """A plugin failed to import or register, or a hook of it raised."""


class ManifestError(PluginError):
    """A plugin's manifest is missing, duplicated or invalid.

    Attributes:
        field: the manifest field at fault (``None`` when the manifest as a whole is).
    """

    def __init__(
        self,
        message: str,
        *,
        plugin: str,
        field: str | None = None,
        distribution: str | None = None,
        problems: Sequence[str] = (),
    ) -> None:
        super().__init__(message, plugin=plugin, distribution=distribution, problems=problems)
        self.field = field


class PluginConfigError(PluginError):
    """A plugin's configuration (``[plugins.<name>]``, its ``$env`` secrets and
    ``ORACLE_PLUGIN_<NAME>__<KEY>`` overrides) does not fit the config model it declares,
    or names an environment variable that is not set. The value itself is never shown.

    Attributes:
        key: the first key at fault (``None`` when the table as a whole is).
    """

    def __init__(
        self,
        message: str,
        *,
        plugin: str,
        key: str | None = None,
        distribution: str | None = None,
        problems: Sequence[str] = (),
    ) -> None:
        super().__init__(message, plugin=plugin, distribution=distribution, problems=problems)
        self.key = key


class PluginConflictError(PluginError):
    """Two plugins claim one name (a plugin name, a tool name, or a route)."""


class DependencyError(PluginError):
    """A plugin's ``depends_on`` names an absent plugin or forms a cycle."""


class StrictPluginError(OracleError):
    """Raised in strict mode (``ORACLE_STRICT_PLUGINS=1``) when any plugin failed.

    Attributes:
        failures: every failure found, in registration order.
    """

    def __init__(self, failures: list[PluginError]) -> None:
        lines = [f"{len(failures)} plugin(s) failed and ORACLE_STRICT_PLUGINS is set:"]
        lines += [f"  - {f.plugin}: {f}" for f in failures]
        super().__init__("\n".join(lines))
        self.failures = failures


class ToolDefinitionError(OracleError, TypeError):
    """A function cannot be turned into a tool (missing type hint, no description, ...)."""


class ToolError(OracleError):
    """Raise from a tool for an expected failure (unknown place, bad unit, ...).

    The message goes to the model as the tool's error, without a traceback in the log:
    it is an answer, not a crash. Any other exception is logged with its traceback.
    """


class ToolArgumentsError(OracleError, ValueError):
    """Arguments given to a tool do not fit its schema.

    The message names each offending field, so it can be shown to the model as is.
    """


class ThreadConflictError(OracleError):
    """Another writer appended to a thread since this writer last read it.

    Raised instead of silently dropping either writer's messages.
    """


class MiddlewareError(OracleError):
    """A plugin's middleware raised; the run fails with this error, naming the plugin.

    Attributes:
        plugin: the plugin that contributed the middleware.
        method: the middleware method that raised (``before_model_call``, ...).
    """

    def __init__(self, middleware: object, method: str, error: BaseException) -> None:
        self.plugin = str(getattr(middleware, "plugin", "") or "")
        self.method = method
        super().__init__(
            f"middleware {type(middleware).__name__} of plugin {self.plugin!r} raised in "
            f"{method}: {type(error).__name__}: {error}"
        )


class ModelError(OracleError):
    """A model call failed for good (after retries, or not retryable)."""


class RunLimitError(OracleError):
    """A run reached a limit the operator set (model calls per run, ...)."""


class UsageLimitExceeded(RunLimitError):
    """A run used more than a usage limit allows (docs/limits.md); it stopped there.

    The run fails with this error, its usage so far recorded, and its thread stays usable.

    Attributes:
        limit: the :class:`~oracle_core.RunLimits` field (``max_output_tokens``, ...).
        value: the figure the limit allows.
        actual: what the run used, or would have used (requests, tool calls).
    """

    def __init__(self, message: str, *, limit: str, value: float, actual: float) -> None:
        super().__init__(message)
        self.limit = limit
        self.value = value
        self.actual = actual


class BudgetExceededError(RunLimitError):
    """A user's or thread's budget for the day or month is spent (docs/usage.md).

    Raised before a model call, so the run stops without spending more; its thread stays
    usable, and runs go on once the window turns (UTC) or the budget is raised.

    Attributes:
        scope: ``"user"`` or ``"thread"``.
        key: the user id or thread id.
        window: ``"day"`` or ``"month"`` (calendar, UTC).
        measure: ``"tokens"``, ``"cost"`` (US dollars) or ``"requests"``.
        limit: the budget.
        spent: what was spent in the window when the run was stopped.
    """

    def __init__(
        self,
        message: str,
        *,
        scope: str,
        key: str,
        window: str,
        measure: str,
        limit: float,
        spent: float,
    ) -> None:
        super().__init__(message)
        self.scope = scope
        self.key = key
        self.window = window
        self.measure = measure
        self.limit = limit
        self.spent = spent


class OracleClosedError(OracleError):
    """The oracle was closed; build a new one to run again."""


class ThreadBusyError(OracleError):
    """A run waited its turn on a thread for as long as it may, and another run still held it."""


class ConfigError(OracleError, ValueError):
    """A setting the operator gave does not fit: ``oracle.toml`` is malformed or holds a value
    of the wrong kind, or an environment variable has a bad value.

    The message is one line naming where (the file and line, or the variable), the key, what
    was found and what is expected; the CLI prints it and exits with status 2.

    Attributes:
        source: the file (its path) or ``"environment"``.
        key: the variable or the dotted key at fault (``None`` for a file that does not parse).
        line: the line in the file (``None`` for the environment, or when unknown).
        expected: what would fit, in words.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str,
        key: str | None = None,
        line: int | None = None,
        expected: str | None = None,
    ) -> None:
        super().__init__(message)
        self.source = source
        self.key = key
        self.line = line
        self.expected = expected


class InvalidThreadIdError(OracleError, ValueError):
    """A thread id does not fit the rule (``oracle_core.values.ids.THREAD_ID``); the message
    names the id and the rule."""


class InvalidUserIdError(OracleError, ValueError):
    """A user id (``user_id``; ``user`` on the OpenAI endpoints) does not fit the rule
    (``oracle_core.values.ids.check_user_id``: 1 to 200 characters, not only spaces, none a
    control character or a lone surrogate); the message names the field and the rule."""


class SecretKeyError(OracleError):
    """``ORACLE_SECRET_KEY`` is missing or not a valid key, so credentials cannot be sealed.

    The message names the variable and how to make a key (``oracle connections keygen``).
    """


class CredentialUnreadableError(OracleError):
    """A stored credential cannot be decrypted: the key is not the one it was sealed with,
    or the stored value was altered. Nothing that needs it runs; set it again."""


class UnknownConnectionError(OracleError, LookupError):
    """A plugin, or a connection of it, that the oracle does not know (or a tool does not list).

    The message names the plugin and the connections it does declare.
    """


class CredentialMissingError(OracleError, LookupError):
    """A tool asked for a credential that is not set (outside a run, which would wait for it)."""


class InvalidCredentialError(OracleError, ValueError):
    """A credential's value or user id cannot be stored (empty, too long, control characters)."""


class SurfaceError(OracleError, ValueError):
    """An oracle's surface is configured in a way that cannot be honoured.

    Raised for a specialist surface that names no tool, more than ten, a whole plugin, a
    meta-tool, a duplicate, an unknown tool, or that is mixed with the catalog surface; and
    for a ``[surface]`` table in ``oracle.toml`` that is not a valid surface.

    Attributes:
        problems: every problem found, each a sentence naming the bad entry and the fix;
            the message lists them all (a single problem is the message itself).
    """

    def __init__(self, message: str, *, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems = list(problems) or [message]


class StoreSchemaError(OracleError):
    """The database's schema cannot be used by this release of oracle-core.

    Raised when the tables are at a newer version than this release knows (another process
    runs a newer release), or no schema exists to hold them. The message names the schema,
    both versions and the fix (``oracle db status`` shows where a database stands).
    """


class OperationError(OracleError):
    """An operation (an approval, a connection, a background call) cannot be handled as asked.

    Raised, for example, when the approved call's tool is not loaded any more (the plugin
    was removed): nothing runs and the decision is not recorded.

    Attributes:
        operation_id: the operation's id.
    """

    def __init__(self, message: str, *, operation_id: str = "") -> None:
        super().__init__(message)
        self.operation_id = operation_id


class OperationNotFoundError(OperationError, LookupError):
    """No operation has this id (HTTP 404); the message never says whether one exists elsewhere."""


class DecisionConflictError(OperationError):
    """A different decision was recorded first for this operation (HTTP 409).

    Attributes:
        status: the status the operation has (``approved``, ``denied``, ``cancelled``...).
    """

    def __init__(self, message: str, *, operation_id: str = "", status: str = "") -> None:
        super().__init__(message, operation_id=operation_id)
        self.status = status


class ToolResultsError(OracleError, ValueError):
    """Tool results given to continue a run do not answer exactly its open calls."""


class ClientToolError(OracleError, ValueError):
    """A caller's own tool cannot be offered: a bad name or schema, or an oracle tool's name."""


class OutputSchemaError(OracleError, ValueError):
    """A wanted output (``output_type``, ``--schema``, ``output_schema``) is not a valid JSON
    Schema, nor a pydantic model class; the message says what is wrong and where."""


class OutputValidationError(OracleError, ValueError):
    """The model's final answer is not valid JSON for the wanted output, even after the one
    repair turn it was given; the run fails with this error (the thread stays usable).

    Attributes:
        schema: the output schema's name.
        problem: what is wrong with the answer (not JSON, or where it breaks the schema).
    """

    def __init__(self, *, schema: str, problem: str) -> None:
        super().__init__(
            f"the model's answer is not valid for the output schema {schema!r}, even after a "
            f"repair turn: {problem}; ask again, describe the JSON in the message, or use a "
            "model that supports structured output"
        )
        self.schema = schema
        self.problem = problem


class OutputLimitError(OutputValidationError):
    """The model's final answer could not be checked within the bounds of structured output
    (its size, its nesting, or the time and work its schema's check took), so the check was
    stopped and the run fails with this error, without a repair turn.

    Attributes:
        schema: the output schema's name.
        problem: the bound the answer or its check went past.
    """

    def __init__(self, *, schema: str, problem: str) -> None:
        OracleError.__init__(
            self,
            f"the model's answer to the output schema {schema!r} was not checked: {problem}; "
            "ask for a smaller answer, or simplify the schema (fewer anyOf/oneOf branches "
            "that refer back to themselves, simpler patterns)",
        )
        self.schema = schema
        self.problem = problem


class ThreadWaitingError(OperationError):
    """A new message came to a thread whose run waits for an operation (an approval, ...).

    The message names the operation and how to settle it (approve, deny or cancel it).
    """


class ApprovalConfigError(ConfigError):
    """The ``[approvals]`` table of ``oracle.toml`` is not valid.

    A :class:`ConfigError`: its one-line message names the file, the line, the key and the
    fix, and the CLI exits with status 2.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str = "oracle.toml",
        key: str | None = None,
        line: int | None = None,
        expected: str | None = None,
    ) -> None:
        super().__init__(message, source=source, key=key, line=line, expected=expected)


class AttachmentError(OracleError, ValueError):
    """A file cannot be attached to a message: missing, too large, or of a kind no model reads
    (the message names the file and what is accepted)."""
