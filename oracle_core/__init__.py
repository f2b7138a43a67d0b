"""oracle-core: an LLM agent runtime whose capabilities come from plugins.

The public API is everything in ``__all__``; plugin authors need only
``hookimpl``, ``PluginManifest``, ``Example`` and ``tool``.
"""

from oracle_core.context import ToolContext
from oracle_core.errors import (
    DependencyError,
    ManifestError,
    OracleError,
    PluginConflictError,
    PluginError,
    PluginLoadError,
    StrictPluginError,
    ThreadConflictError,
    ToolArgumentsError,
    ToolDefinitionError,
    ToolError,
)
from oracle_core.hookspecs import hookimpl, hookspec
from oracle_core.manifest import Example, ManifestWarning, PluginManifest, Visibility
from oracle_core.oracle import Oracle
from oracle_core.plugins.registry import BoundTool, Plugin, Registry
from oracle_core.routes import Route
from oracle_core.run.messages import ModelRequest, ModelResponse, ToolCall, ToolResult, Usage
from oracle_core.run.middleware import Middleware
from oracle_core.settings import Settings
from oracle_core.store.plugin_store import SQLiteStore, connect_sqlite
from oracle_core.tools import Tool, tool

__version__ = "0.1.0"

__all__ = [
    "BoundTool",
    "DependencyError",
    "Example",
    "ManifestError",
    "ManifestWarning",
    "Middleware",
    "ModelRequest",
    "ModelResponse",
    "Oracle",
    "OracleError",
    "Plugin",
    "PluginConflictError",
    "PluginError",
    "PluginLoadError",
    "PluginManifest",
    "Registry",
    "Route",
    "SQLiteStore",
    "Settings",
    "StrictPluginError",
    "ThreadConflictError",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolResult",
    "Usage",
    "Visibility",
    "__version__",
    "connect_sqlite",
    "hookimpl",
    "hookspec",
    "tool",
]
