"""An MCP server as an oracle plugin: a plugin object whose hooks come from the server.

:class:`MCPPlugin` implements the ordinary hooks, so the core assembles, validates,
resolves, searches, gates, loads and calls an MCP server's tools exactly like any other
plugin's. What differs is only where the hooks' answers come from:

- ``oracle_manifest``: the server's definition (summary, when_to_use, tags, category),
  else its ``instructions`` and tool descriptions.
- ``oracle_tools``: one :class:`~oracle_core.Tool` per tool of the last listing (cached
  under ``ORACLE_HOME``; a server with no listing yet is started once, here, to list its
  tools). Each tool carries the server's JSON schema as given; its arguments are checked
  against that schema (``jsonschema``) before the call goes to the server.
- ``oracle_middleware``: starts the server in the background when a thread loads it, so
  the first call does not wait for the start.
- ``oracle_shutdown``: stops the server.

When the running server announces ``notifications/tools/list_changed``, the new listing is
cached and the plugin's tools are swapped in the oracle (:meth:`~oracle_core.Oracle.
replace_plugin`): the next run sees them; runs already going keep theirs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from oracle_core.authoring.manifest import PluginManifest
from oracle_core.authoring.middleware import Middleware
from oracle_core.authoring.parts import RegistryView
from oracle_core.authoring.tools.tool import Tool
from oracle_core.errors import PluginLoadError, ToolError
from oracle_core.hookspecs import hookimpl
from oracle_core.plugins.mcp.config import MCPServer
from oracle_core.plugins.mcp.connection import (
    MAX_BACKOFF,
    ServerConnection,
    StartTimeoutError,
    describe,
    fetch_listing,
)
from oracle_core.plugins.mcp.listing import Listing, ListingCache, ToolSpec, bounded
from oracle_core.plugins.mcp.results import check_arguments, result_value, schema_validator
from oracle_core.plugins.registry import Plugin
from oracle_core.values.messages import ToolCall, ToolResult

log = logging.getLogger("oracle_core.plugins.mcp")

_SENTENCE = re.compile(r"(?<=[.!?])\s")


class _Replaces(Protocol):
    """What the adapter needs of the running oracle (its plugin handle) to swap in a
    server's new tools."""

    @property
    def own(self) -> Plugin | None: ...

    @property
    def registry(self) -> RegistryView: ...

    def replace_plugin(self, plugin: Plugin) -> None: ...


class MCPArguments(BaseModel):
    """The arguments of an MCP tool call, passed on as they are (each one a keyword).

    The server's JSON schema is what they must fit, so the tool checks them against it
    (with ``jsonschema``) rather than through a pydantic model of its own. Taken as extra
    fields, the validated arguments are the call's own: an approval saves and digests
    exactly them, and the approved call validates to the same again.
    """

    model_config = ConfigDict(extra="allow")


class MCPPlugin:
    """The plugin object of one MCP server (hook implementations; no module needed).

    Args:
        definition: the server.
        cache: where its last tool listing is kept.
        taken: tool names other plugins already have: a server's tool of such a name is
            left out (reported) rather than the whole server.
    """

    def __init__(
        self, definition: MCPServer, cache: ListingCache, taken: frozenset[str] = frozenset()
    ) -> None:
        self.definition = definition
        self.cache = cache
        self.taken = taken
        self.__name__ = f"mcp:{definition.name}"
        self._listing: Listing | None = None
        self._failure: PluginLoadError | None = None
        self._connection: ServerConnection | None = None
        self._validators: dict[str, Any] = {}
        self._oracle: _Replaces | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def name(self) -> str:
        """The plugin's name (the server's)."""
        return self.definition.name

    @property
    def connection(self) -> ServerConnection:
        """The server's connection (made at assembly; the server starts on first need)."""
        if self._connection is None:
            self._connection = ServerConnection(
                self.definition, self.listing(), on_listing=self._take_listing
            )
        return self._connection

    def status(self) -> dict[str, Any]:
        """The server's state for ``oracle plugins``: state, transport, tools, restarts, error."""
        status = self.connection.status()
        status["problems"] = list(self.connection.listing.problems)
        return status

    def listing(self) -> Listing:
        """The server's tools: the cached listing, else listed now (starting the server once).

        Raises:
            PluginLoadError: naming the server, when it cannot be started or listed.
        """
        if self._failure is not None:
            raise self._failure
        if self._listing is None:
            listing = self.cache.load(self.definition)
            if listing is None:
                try:
                    listing = self._fetch()
                except PluginLoadError as error:
                    self._failure = error  # reported once, by oracle_manifest
                    raise
                self.cache.save(self.definition, listing)
            self._listing = listing
            for problem in listing.problems:
                log.warning("MCP server %s: %s", self.name, problem)
        return self._listing

    def _fetch(self) -> Listing:
        try:
            return asyncio.run(fetch_listing(self.definition))
        except Exception as error:
            reason = describe(error)
            # A slow start names start_timeout (in reason); any other failure the command.
            fix = (
                ""
                if isinstance(error, StartTimeoutError)
                else f"; check its {'command' if self.definition.command else 'url'}"
            )
            raise PluginLoadError(
                f"{self.definition.where()} could not be started to list its tools ({reason}){fix}",
                plugin=self.name,
            ) from None

    # -- hooks -----------------------------------------------------------------------------------

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        """The manifest from the definition, else from the server's own words."""
        return self.manifest(self.listing())

    @hookimpl
    def oracle_tools(self) -> list[Tool]:
        """One tool per tool of the server's listing (but those whose names are taken)."""
        if self._failure is not None:
            return []  # the server could not be listed: oracle_manifest said so
        return self._tools(self.connection.listing, self.taken)

    @hookimpl
    def oracle_middleware(self) -> list[Middleware]:
        """Starts the server in the background when a thread loads it."""
        return [_StartOnLoad(self)]

    @hookimpl
    async def oracle_startup(self, oracle: Any) -> None:
        """Keep the running oracle, to swap in new tools when the server's list changes."""
        self._oracle = (
            oracle if hasattr(oracle, "replace_plugin") and hasattr(oracle, "own") else None
        )

    @hookimpl
    async def oracle_shutdown(self) -> None:
        """Stop the server, also one still starting in the background."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        # Waited for, so nothing of the server is left running (or unreported) after close.
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._connection is not None:
            await self._connection.close()

    # -- the parts -------------------------------------------------------------------------------

    def manifest(self, listing: Listing) -> PluginManifest:
        """The plugin's manifest for ``listing``."""
        d = self.definition
        names = ", ".join(t.remote for t in listing.tools[:4])
        summary = d.summary or _first_sentence(listing.instructions) or (
            f"Tools of the MCP server {d.name}" + (f": {names}" if names else "")
        )  # fmt: skip
        when = list(d.when_to_use) or [
            _first_sentence(t.description) for t in listing.tools[:3] if t.description
        ]
        tags = list(dict.fromkeys(["mcp", *(t.strip().lower() for t in d.tags if t.strip())]))
        return PluginManifest(
            name=d.name,
            title=d.title or "",
            summary=bounded(summary, 120),
            when_to_use=when or [bounded(summary, 120)],
            when_not_to_use=list(d.when_not_to_use),
            tags=tags,
            category=d.category or "mcp",
            visibility=d.visibility,
        )

    def _tools(self, listing: Listing, taken: frozenset[str]) -> list[Tool]:
        tools = []
        for spec in listing.tools:
            if spec.name in taken:
                log.warning(
                    "MCP server %s: tool %r is left out: another plugin has a tool of that "
                    "name (set a 'prefix' for the server)", self.name, spec.name,
                )  # fmt: skip
                continue
            tools.append(self._tool(spec))
        return tools

    def _tool(self, spec: ToolSpec) -> Tool:
        name = spec.name

        async def call(**arguments: Any) -> Any:
            return await self.call(name, arguments)

        d = self.definition
        return Tool(
            name,
            spec.description,
            parameters=spec.schema,
            function=call,
            # A first call may wait for the server to start (and restart) before it runs.
            timeout=d.timeout + d.start_timeout + MAX_BACKOFF + 1,
            args_model=MCPArguments,
        )

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call the server's tool the model knows as ``name``.

        Raises:
            ToolArgumentsError: when ``arguments`` do not fit the tool's JSON schema.
            ToolError: when the server no longer offers the tool, is down, or answered
                with an error (its message is the server's text).
        """
        connection = self.connection
        spec = connection.listing.by_name().get(name)
        if spec is None:
            raise ToolError(f"the MCP server {self.name!r} no longer offers the tool {name!r}")
        validator = self._validators.get(name)
        if validator is None or validator.schema is not spec.schema:
            validator = self._validators[name] = schema_validator(spec.schema)
        check_arguments(name, validator, arguments)
        result = await connection.call(spec.remote, arguments)
        return result_value(self.name, result)

    def start_soon(self) -> None:
        """Start the server in the background (on a load); a failure shows at the first call."""
        if self.connection.state in ("running", "starting", "failed"):
            return

        async def start() -> None:
            try:
                await self.connection.start()
            except ToolError as error:
                if self.connection.state != "stopped":  # closing while it started is no news
                    log.warning("%s", error)

        task = asyncio.get_running_loop().create_task(start(), name=f"mcp-{self.name}-start")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _take_listing(self, listing: Listing) -> None:
        """The running server's tools changed: cache them, and swap them in the oracle."""
        self.cache.save(self.definition, listing)
        self._listing = listing
        oracle = self._oracle
        if oracle is None:
            return
        current = oracle.own  # this plugin as assembled (the handle shows others as views)
        if current is None or current.obj is not self:
            return
        others = (p for p in oracle.registry.plugins.values() if p.name != self.name)
        taken = frozenset(t.name for p in others for t in p.tools)
        tools = self._tools(listing, taken)
        try:
            manifest = self.manifest(listing)
        except ValueError as error:
            log.warning("MCP server %s: its new manifest is invalid (%s); kept", self.name, error)
            manifest = current.manifest
        oracle.replace_plugin(dataclasses.replace(current, manifest=manifest, tools=tools))
        log.info("MCP server %s: %d tools after list_changed", self.name, len(tools))


class _StartOnLoad(Middleware):
    """Starts an MCP server as soon as a thread loads its plugin."""

    def __init__(self, plugin: MCPPlugin) -> None:
        self._plugin = plugin

    async def after_tool_call(self, call: ToolCall, result: ToolResult) -> None:
        if self._plugin.name in result.loaded:
            self._plugin.start_soon()


def _first_sentence(text: str) -> str:
    """The first line's first sentence of ``text`` (bounded)."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return bounded(_SENTENCE.split(line, maxsplit=1)[0], 120)
