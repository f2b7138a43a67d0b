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


class OracleClosedError(OracleError):
    """The oracle was closed; build a new one to run again."""


class ThreadBusyError(OracleError):
    """A run waited its turn on a thread for as long as it may, and another run still held it."""
