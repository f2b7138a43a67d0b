"""MCP export: an oracle served over MCP (``oracle mcp`` on stdio, ``/mcp`` on ``oracle serve``)."""
