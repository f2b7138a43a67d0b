"""oracle-core: an LLM agent runtime whose capabilities come from plugins.

The public API is everything in ``__all__``, in two faces:

- embedding an oracle: :class:`Oracle`, :class:`Settings`, :class:`RunResult`, the run
  events, :class:`Model`, :class:`Checkpointer` and its stores, and every error;
- writing a plugin (also importable from :mod:`oracle_core.plugin`): ``hookimpl``,
  ``tool``, :class:`Tool`, :class:`ToolContext`, :class:`PluginManifest`,
  :class:`Example`, :class:`Middleware`, :class:`Route`, :class:`ToolError`,
  :class:`SQLiteStore`, ...

Internals (the registry, bound tools, the run loop) live in their modules and may change.
"""

from oracle_core.errors import (
    DependencyError,
    ManifestError,
    MiddlewareError,
    ModelError,
    OracleClosedError,
    OracleError,
    PluginConflictError,
    PluginError,
    PluginLoadError,
    RunLimitError,
    StrictPluginError,
    ThreadConflictError,
    ToolArgumentsError,
    ToolDefinitionError,
    ToolError,
)
from oracle_core.manifest import ManifestWarning
from oracle_core.models.base import Model
from oracle_core.oracle import Oracle
from oracle_core.plugin import (
    Example,
    Middleware,
    ModelHandler,
    ModelRequest,
    ModelResponse,
    OracleHandle,
    PluginHost,
    PluginManifest,
    Route,
    SQLiteStore,
    Tool,
    ToolCall,
    ToolContext,
    ToolHandler,
    ToolHost,
    ToolResult,
    Visibility,
    connect_sqlite,
    hookimpl,
    hookspec,
    tool,
)
from oracle_core.run.events import (
    CapabilityLoaded,
    Event,
    ModelCallStarted,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from oracle_core.run.limits import RunLimits
from oracle_core.run.messages import Usage
from oracle_core.run.result import RunResult
from oracle_core.settings import Settings
from oracle_core.store import Checkpointer, MemoryCheckpointer, SQLiteCheckpointer
from oracle_core.store.state import RunRecord, ThreadState

__version__ = "0.1.0"

__all__ = [
    "CapabilityLoaded",
    "Checkpointer",
    "DependencyError",
    "Event",
    "Example",
    "ManifestError",
    "ManifestWarning",
    "MemoryCheckpointer",
    "Middleware",
    "MiddlewareError",
    "Model",
    "ModelCallStarted",
    "ModelError",
    "ModelHandler",
    "ModelRequest",
    "ModelResponse",
    "Oracle",
    "OracleClosedError",
    "OracleError",
    "OracleHandle",
    "PluginConflictError",
    "PluginError",
    "PluginHost",
    "PluginLoadError",
    "PluginManifest",
    "Route",
    "RunFinished",
    "RunLimitError",
    "RunLimits",
    "RunRecord",
    "RunResult",
    "RunStarted",
    "SQLiteCheckpointer",
    "SQLiteStore",
    "Settings",
    "StrictPluginError",
    "TextDelta",
    "ThreadConflictError",
    "ThreadState",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallEvent",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolHandler",
    "ToolHost",
    "ToolResult",
    "ToolResultEvent",
    "Usage",
    "UsageEvent",
    "Visibility",
    "__version__",
    "connect_sqlite",
    "hookimpl",
    "hookspec",
    "tool",
]
