"""What a plugin author's objects are: the manifest, tools, middleware, routes, the tool
context, the host handle, connections, secrets and MCP server definitions."""
