"""MCP both ways, with the official ``mcp`` SDK (``pip install 'oracle-core-runtime[mcp]'``).

Import: an MCP server (``[mcp.<name>]`` in ``oracle.toml``, an :class:`MCPServer` given in
code, or one a plugin ships through ``oracle_mcp_servers``) becomes an on-demand plugin
(:mod:`~oracle_core.plugins.mcp.adapter`). Export: ``oracle mcp`` and ``/mcp`` on ``oracle serve``
serve one thread's model-facing surface per MCP session (:mod:`~oracle_core.server.mcp.export`).
See docs/mcp.md. Importing this package imports nothing of the SDK.
"""

from oracle_core.plugins.mcp.config import MCPServer

__all__ = ["MCPServer"]
