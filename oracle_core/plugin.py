"""The plugin author's face of oracle-core: everything a plugin package imports.

``from oracle_core import hookimpl, tool, PluginManifest, Example`` is enough for most
plugins; the same names are importable from here, where nothing an embedding application
needs gets in the way.
"""

from oracle_core.authoring.connections import Connection
from oracle_core.authoring.context import ToolContext, ToolHost
from oracle_core.authoring.host import OracleHandle, PluginHost
from oracle_core.authoring.manifest import Example, PluginManifest, Visibility
from oracle_core.authoring.mcp import MCPServer
from oracle_core.authoring.middleware import Middleware, ModelHandler, ToolHandler
from oracle_core.authoring.prompts import Prompt, PromptArgument, Resource
from oracle_core.authoring.routes import Route
from oracle_core.authoring.secrets import Secret
from oracle_core.authoring.tools.decorator import tool
from oracle_core.authoring.tools.tool import Tool
from oracle_core.errors import ToolError
from oracle_core.hookspecs import hookimpl, hookspec
from oracle_core.store.sqlite.connect import SQLiteStore, connect_sqlite
from oracle_core.values.messages import ModelRequest, ModelResponse, ToolCall, ToolResult

__all__ = [
    "Connection",
    "Example",
    "MCPServer",
    "Middleware",
    "ModelHandler",
    "ModelRequest",
    "ModelResponse",
    "OracleHandle",
    "PluginHost",
    "PluginManifest",
    "Prompt",
    "PromptArgument",
    "Resource",
    "Route",
    "SQLiteStore",
    "Secret",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolHandler",
    "ToolHost",
    "ToolResult",
    "Visibility",
    "connect_sqlite",
    "hookimpl",
    "hookspec",
    "tool",
]
