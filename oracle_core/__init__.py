"""oracle-core: an LLM agent runtime whose capabilities come from plugins.

The public API is everything in ``__all__``, in two faces:

- embedding an oracle: :class:`Oracle`, :class:`Settings`, :class:`RunResult`, the run
  events, :class:`Model`, :class:`Checkpointer` and its stores, the surfaces
  (:class:`Catalog`, :class:`Specialist`), and every error;
- writing a plugin (also importable from :mod:`oracle_core.plugin`): ``hookimpl``,
  ``tool``, :class:`Tool`, :class:`ToolContext`, :class:`PluginManifest`,
  :class:`Example`, :class:`Middleware`, :class:`Route`, :class:`ToolError`,
  :class:`SQLiteStore`, ...

Internals (the registry, bound tools, the run loop) live in their modules and may change.
"""

import ast
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The export table: each public name and the module that defines it, written once. Type
# checkers read it as it stands ("X as X" re-exports X); at run time the names are imported
# on first use (PEP 562), so ``import oracle_core`` and ``oracle --help`` do not pay for the
# whole framework: ``_exports`` reads this block from the source.
if TYPE_CHECKING:
    from oracle_core.authoring.manifest import ManifestWarning as ManifestWarning
    from oracle_core.capabilities.surface import (
        Catalog as Catalog,
    )
    from oracle_core.capabilities.surface import (
        Specialist as Specialist,
    )
    from oracle_core.capabilities.surface import (
        Surface as Surface,
    )
    from oracle_core.errors import (
        ApprovalConfigError as ApprovalConfigError,
    )
    from oracle_core.errors import (
        ConfigError as ConfigError,
    )
    from oracle_core.errors import (
        CredentialMissingError as CredentialMissingError,
    )
    from oracle_core.errors import (
        CredentialUnreadableError as CredentialUnreadableError,
    )
    from oracle_core.errors import (
        DecisionConflictError as DecisionConflictError,
    )
    from oracle_core.errors import (
        DependencyError as DependencyError,
    )
    from oracle_core.errors import (
        InvalidCredentialError as InvalidCredentialError,
    )
    from oracle_core.errors import (
        InvalidThreadIdError as InvalidThreadIdError,
    )
    from oracle_core.errors import (
        ManifestError as ManifestError,
    )
    from oracle_core.errors import (
        MiddlewareError as MiddlewareError,
    )
    from oracle_core.errors import (
        ModelError as ModelError,
    )
    from oracle_core.errors import (
        OperationError as OperationError,
    )
    from oracle_core.errors import (
        OperationNotFoundError as OperationNotFoundError,
    )
    from oracle_core.errors import (
        OracleClosedError as OracleClosedError,
    )
    from oracle_core.errors import (
        OracleError as OracleError,
    )
    from oracle_core.errors import (
        PluginConfigError as PluginConfigError,
    )
    from oracle_core.errors import (
        PluginConflictError as PluginConflictError,
    )
    from oracle_core.errors import (
        PluginError as PluginError,
    )
    from oracle_core.errors import (
        PluginLoadError as PluginLoadError,
    )
    from oracle_core.errors import (
        RunLimitError as RunLimitError,
    )
    from oracle_core.errors import (
        SecretKeyError as SecretKeyError,
    )
    from oracle_core.errors import (
        StoreSchemaError as StoreSchemaError,
    )
    from oracle_core.errors import (
        StrictPluginError as StrictPluginError,
    )
    from oracle_core.errors import (
        SurfaceError as SurfaceError,
    )
    from oracle_core.errors import (
        ThreadConflictError as ThreadConflictError,
    )
    from oracle_core.errors import (
        ThreadWaitingError as ThreadWaitingError,
    )
    from oracle_core.errors import (
        ToolArgumentsError as ToolArgumentsError,
    )
    from oracle_core.errors import (
        ToolDefinitionError as ToolDefinitionError,
    )
    from oracle_core.errors import (
        ToolError as ToolError,
    )
    from oracle_core.errors import (
        UnknownConnectionError as UnknownConnectionError,
    )
    from oracle_core.models.base import Model as Model
    from oracle_core.oracle import Oracle as Oracle
    from oracle_core.plugin import (
        Connection as Connection,
    )
    from oracle_core.plugin import (
        Example as Example,
    )
    from oracle_core.plugin import (
        MCPServer as MCPServer,
    )
    from oracle_core.plugin import (
        Middleware as Middleware,
    )
    from oracle_core.plugin import (
        ModelHandler as ModelHandler,
    )
    from oracle_core.plugin import (
        ModelRequest as ModelRequest,
    )
    from oracle_core.plugin import (
        ModelResponse as ModelResponse,
    )
    from oracle_core.plugin import (
        OracleHandle as OracleHandle,
    )
    from oracle_core.plugin import (
        PluginHost as PluginHost,
    )
    from oracle_core.plugin import (
        PluginManifest as PluginManifest,
    )
    from oracle_core.plugin import (
        Route as Route,
    )
    from oracle_core.plugin import (
        Secret as Secret,
    )
    from oracle_core.plugin import (
        SQLiteStore as SQLiteStore,
    )
    from oracle_core.plugin import (
        Tool as Tool,
    )
    from oracle_core.plugin import (
        ToolCall as ToolCall,
    )
    from oracle_core.plugin import (
        ToolContext as ToolContext,
    )
    from oracle_core.plugin import (
        ToolHandler as ToolHandler,
    )
    from oracle_core.plugin import (
        ToolHost as ToolHost,
    )
    from oracle_core.plugin import (
        ToolResult as ToolResult,
    )
    from oracle_core.plugin import (
        Visibility as Visibility,
    )
    from oracle_core.plugin import (
        connect_sqlite as connect_sqlite,
    )
    from oracle_core.plugin import (
        hookimpl as hookimpl,
    )
    from oracle_core.plugin import (
        hookspec as hookspec,
    )
    from oracle_core.plugin import (
        tool as tool,
    )
    from oracle_core.settings import Settings as Settings
    from oracle_core.store import (
        Checkpointer as Checkpointer,
    )
    from oracle_core.store import (
        MemoryCheckpointer as MemoryCheckpointer,
    )
    from oracle_core.store import (
        SQLiteCheckpointer as SQLiteCheckpointer,
    )
    from oracle_core.values.events import (
        ApprovalRequested as ApprovalRequested,
    )
    from oracle_core.values.events import (
        CapabilityLoaded as CapabilityLoaded,
    )
    from oracle_core.values.events import (
        ConnectionRequested as ConnectionRequested,
    )
    from oracle_core.values.events import (
        Event as Event,
    )
    from oracle_core.values.events import (
        ModelCallStarted as ModelCallStarted,
    )
    from oracle_core.values.events import (
        OperationUpdated as OperationUpdated,
    )
    from oracle_core.values.events import (
        RunFinished as RunFinished,
    )
    from oracle_core.values.events import (
        RunStarted as RunStarted,
    )
    from oracle_core.values.events import (
        TextDelta as TextDelta,
    )
    from oracle_core.values.events import (
        ToolCallEvent as ToolCallEvent,
    )
    from oracle_core.values.events import (
        ToolResultEvent as ToolResultEvent,
    )
    from oracle_core.values.events import (
        UsageEvent as UsageEvent,
    )
    from oracle_core.values.limits import RunLimits as RunLimits
    from oracle_core.values.messages import Usage as Usage
    from oracle_core.values.operations import Operation as Operation
    from oracle_core.values.result import RunResult as RunResult
    from oracle_core.values.threads import (
        RunRecord as RunRecord,
    )
    from oracle_core.values.threads import (
        ThreadState as ThreadState,
    )


def _exports() -> dict[str, str]:
    """``public name -> defining module``, read from the ``TYPE_CHECKING`` table above."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If))
    return {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


_EXPORTS = _exports()


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'oracle_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # bound as an eager import would: later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__version__ = "0.1.0"

__all__ = [*sorted(_EXPORTS), "__version__"]
