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

import importlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oracle_core.version import __version__

# The export table: each public name and the module that defines it, written once. Type
# checkers read it as it stands ("X as X" re-exports X); at run time the names are imported
# on first use (PEP 562), so ``import oracle_core`` and ``oracle --help`` do not pay for the
# whole framework: ``_exports`` reads this block from the source (one import a module, every
# name as ``X as X``; a regular expression, so no module is imported to read it):
# isort: skip_file
if TYPE_CHECKING:
    from oracle_core.authoring.manifest import ManifestWarning as ManifestWarning
    from oracle_core.capabilities.surface import (
        Catalog as Catalog,
        Specialist as Specialist,
        Surface as Surface,
    )
    from oracle_core.errors import (
        ApprovalConfigError as ApprovalConfigError,
        AttachmentError as AttachmentError,
        BudgetExceededError as BudgetExceededError,
        ClientToolError as ClientToolError,
        ConfigError as ConfigError,
        CredentialMissingError as CredentialMissingError,
        CredentialUnreadableError as CredentialUnreadableError,
        DecisionConflictError as DecisionConflictError,
        DependencyError as DependencyError,
        InvalidCredentialError as InvalidCredentialError,
        InvalidThreadIdError as InvalidThreadIdError,
        InvalidUserIdError as InvalidUserIdError,
        ManifestError as ManifestError,
        MiddlewareError as MiddlewareError,
        ModelError as ModelError,
        OperationError as OperationError,
        OperationNotFoundError as OperationNotFoundError,
        OracleClosedError as OracleClosedError,
        OracleError as OracleError,
        OutputSchemaError as OutputSchemaError,
        OutputValidationError as OutputValidationError,
        PluginConfigError as PluginConfigError,
        PluginConflictError as PluginConflictError,
        PluginError as PluginError,
        PluginLoadError as PluginLoadError,
        RunLimitError as RunLimitError,
        SecretKeyError as SecretKeyError,
        StoreSchemaError as StoreSchemaError,
        StrictPluginError as StrictPluginError,
        SurfaceError as SurfaceError,
        ThreadConflictError as ThreadConflictError,
        ThreadWaitingError as ThreadWaitingError,
        ToolArgumentsError as ToolArgumentsError,
        ToolDefinitionError as ToolDefinitionError,
        ToolError as ToolError,
        ToolResultsError as ToolResultsError,
        UnknownConnectionError as UnknownConnectionError,
        UsageLimitExceeded as UsageLimitExceeded,
    )
    from oracle_core.models.base import EmptyReplyError as EmptyReplyError
    from oracle_core.models.base import Model as Model
    from oracle_core.oracle import Oracle as Oracle
    from oracle_core.plugin import (
        Connection as Connection,
        Example as Example,
        MCPServer as MCPServer,
        Middleware as Middleware,
        ModelHandler as ModelHandler,
        ModelRequest as ModelRequest,
        ModelResponse as ModelResponse,
        OracleHandle as OracleHandle,
        PluginHost as PluginHost,
        PluginManifest as PluginManifest,
        Prompt as Prompt,
        PromptArgument as PromptArgument,
        Resource as Resource,
        Route as Route,
        Secret as Secret,
        SQLiteStore as SQLiteStore,
        Tool as Tool,
        ToolCall as ToolCall,
        ToolContext as ToolContext,
        ToolHandler as ToolHandler,
        ToolHost as ToolHost,
        ToolResult as ToolResult,
        Visibility as Visibility,
        connect_sqlite as connect_sqlite,
        hookimpl as hookimpl,
        hookspec as hookspec,
        tool as tool,
    )
    from oracle_core.settings import Settings as Settings
    from oracle_core.store import (
        Checkpointer as Checkpointer,
        MemoryCheckpointer as MemoryCheckpointer,
        SQLiteCheckpointer as SQLiteCheckpointer,
    )
    from oracle_core.values.attachments import Attachment as Attachment
    from oracle_core.values.events import (
        ApprovalRequested as ApprovalRequested,
        CapabilityLoaded as CapabilityLoaded,
        ConnectionRequested as ConnectionRequested,
        Event as Event,
        ModelCallStarted as ModelCallStarted,
        OperationUpdated as OperationUpdated,
        RunFinished as RunFinished,
        RunResumed as RunResumed,
        RunStarted as RunStarted,
        TextDelta as TextDelta,
        ToolCallEvent as ToolCallEvent,
        ToolResultEvent as ToolResultEvent,
        UsageEvent as UsageEvent,
    )
    from oracle_core.values.limits import RunLimits as RunLimits
    from oracle_core.values.messages import Usage as Usage
    from oracle_core.values.operations import Operation as Operation
    from oracle_core.values.output import OutputSchema as OutputSchema
    from oracle_core.values.result import RunResult as RunResult
    from oracle_core.values.run_options import (
        ClientTool as ClientTool,
        RunOptions as RunOptions,
    )
    from oracle_core.values.threads import (
        RunRecord as RunRecord,
        ThreadState as ThreadState,
    )


_TABLE_ROW = re.compile(r"^    from (oracle_core[\w.]*) import (?:\(([^)]*)\)|(.*))$", re.MULTILINE)


def _exports() -> dict[str, str]:
    """``public name -> defining module``, read from the ``TYPE_CHECKING`` table above."""
    source = Path(__file__).read_text(encoding="utf-8")
    start = source.index("if TYPE_CHECKING:")
    block = source[start : source.index("\n\n\n", start)]
    return {
        name.split(" as ")[0].strip(): module
        for module, grouped, single in _TABLE_ROW.findall(block)
        for name in (grouped or single).split(",")
        if name.strip()
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


__all__ = [*sorted(_EXPORTS), "__version__"]
