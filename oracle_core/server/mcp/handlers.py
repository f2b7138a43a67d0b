"""The MCP methods an exported oracle answers, over one thread's surface per session.

:func:`build` makes the SDK's low-level :class:`mcp.server.Server` for
:mod:`~oracle_core.server.mcp.export`: ``tools/*`` over the session's
:class:`~oracle_core.server.mcp.surface.ThreadSurface` (a call that must wait goes to
:mod:`~oracle_core.server.mcp.waits`), ``prompts/*`` and ``resources/*`` over the plugins'
:mod:`~oracle_core.server.mcp.offers` (registered only when there are some, so the
capabilities say what is served), ``logging/setLevel`` (:mod:`~oracle_core.server.mcp.logs`)
and, over HTTP, ``server/discover`` answered "not found". The capabilities are declared as
the server behaves, whatever options a transport passes: every list changes with a load,
and each change is announced.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from oracle_core.server.mcp import logs, waits
from oracle_core.server.mcp.offers import OfferError, Offers, blob, read, render
from oracle_core.server.mcp.surface import Called, ThreadSurface
from oracle_core.values.messages import ToolResult
from oracle_core.values.tool_errors import failed_call

if TYPE_CHECKING:
    from mcp.server import Server

    from oracle_core.oracle import Oracle

log = logging.getLogger("oracle_core.plugins.mcp")


class SessionsView(Protocol):
    """What the handlers need of the export's sessions (:class:`~oracle_core.server.mcp.
    export.Sessions`)."""

    @property
    def oracle(self) -> Oracle:
        """The oracle served."""
        ...

    @property
    def thread_id(self) -> str | None:
        """The thread of every session (stdio), or ``None`` (HTTP: one per session)."""
        ...

    def session(self, ctx: Any) -> Any:
        """The session of the request ``ctx`` (its ``surface`` and ``log_level``)."""
        ...

    def surface(self, ctx: Any) -> ThreadSurface:
        """The surface of the session of the request ``ctx``."""
        ...

    def check_era(self, ctx: Any) -> None:
        """Raise the refusal of a request that has no session to work on."""
        ...

    def refusal(self, code: int) -> Exception:
        """The error that says this server keeps one thread per session."""
        ...


def build(sessions: SessionsView, offers: Offers | None = None) -> Server[Any]:
    """The SDK server that exposes ``sessions``' surfaces, and ``offers``' prompts and
    resources (declared only when there are some)."""
    import mcp.types as types
    from mcp.server import NotificationOptions, Server
    from mcp.server.subscriptions import (
        InMemorySubscriptionBus,
        ListenHandler,
        PromptsListChanged,
        ResourcesListChanged,
        ToolsListChanged,
    )
    from mcp.shared.exceptions import MCPError
    from mcp.types import METHOD_NOT_FOUND

    offered = offers or Offers()
    oracle = sessions.oracle
    limits = oracle.limits
    # stdio serves one session, so its changes may go to every listener of the bus.
    bus = InMemorySubscriptionBus() if sessions.thread_id is not None else None
    changes = NotificationOptions(
        tools_changed=True,
        prompts_changed=bool(offered.prompts),
        resources_changed=bool(offered.resources),
    )

    class _Exported(Server[Any]):
        def get_capabilities(self, notification_options: Any = None, *args: Any, **kw: Any) -> Any:
            # Declared as the server behaves, whatever options the transport passes (the
            # HTTP session manager passes none): every list this server keeps changes with
            # a load, and each change is announced.
            return super().get_capabilities(changes, *args, **kw)

    async def announce(ctx: Any, loaded: Iterable[str]) -> None:
        """Tell the client which of its lists a load (or a new operation) changed."""
        loaded = set(loaded)
        events: list[tuple[str, Any]] = [("send_tool_list_changed", ToolsListChanged())]
        if any(o.plugin in loaded for o in offered.prompts.values()):
            events.append(("send_prompt_list_changed", PromptsListChanged()))
        if any(o.plugin in loaded for o in offered.resources.values()):
            events.append(("send_resource_list_changed", ResourcesListChanged()))
        try:
            for method, event in events:
                await getattr(ctx.session, method)()  # handshake era
                if bus is not None:
                    await bus.publish(event)  # 2026-07-28: subscriptions/listen
        except Exception as error:  # the client went away: the load is saved anyway
            log.info("could not announce a list change: %s", error)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        sessions.check_era(ctx)
        tools = await sessions.surface(ctx).tools()
        return types.ListToolsResult(
            tools=[
                types.Tool(name=t.name, description=t.description, input_schema=t.parameters)
                for t in tools
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
        sessions.check_era(ctx)
        session = sessions.session(ctx)
        with logs.captured(session.log_level) as messages:
            answer = await _call(ctx, session.surface, params)
        for message in messages:
            try:
                await ctx.session.send_notification(
                    types.LoggingMessageNotification(
                        params=types.LoggingMessageNotificationParams(**message)
                    ),
                    related_request_id=ctx.request_id,
                )
            except Exception as error:  # the client went away
                log.info("could not forward a log record: %s", error)
                break
        return answer

    async def _call(ctx: Any, surface: ThreadSurface, params: Any) -> Any:
        deps = await oracle.run_deps()
        if params.request_state is not None:  # 2026-07-28: the answer to an approval question
            operation = await waits.pending_of(
                deps, params.request_state, surface.thread_id, params.name
            )
            if operation is None:
                return _tool_result(_not_ours(params.name))
            decided = waits.decision((params.input_responses or {}).get(waits.DECISION))
            if decided is None:
                return _tool_result(await waits.unanswered(deps, operation))
            return _tool_result(await waits.decide(deps, operation.id, *decided))
        called = await surface.call(params.name, params.arguments)
        if called.result.loaded or (called.result.operation is not None and not called.waiting):
            # A load shows more; a background call's operation shows get_operation.
            await announce(ctx, called.result.loaded)
        if not called.waiting:
            return _tool_result(called.result)
        return await _wait(ctx, called)

    async def _wait(ctx: Any, called: Called) -> Any:
        deps = await oracle.run_deps()
        recorded = await waits.record(deps, called)
        if isinstance(recorded, ToolResult):
            return _tool_result(recorded)
        await announce(ctx, ())  # the thread has an operation now: get_operation is shown
        if recorded.kind != "approval" or not waits.can_ask(ctx.session.client_capabilities):
            return _tool_result(waits.waiting_result(recorded))
        question = types.ElicitRequestFormParams(
            message=waits.question(recorded), requested_schema=waits.APPROVAL_SCHEMA
        )
        if ctx.protocol_version in _MODERN:  # the client asks, then calls again with the answer
            return types.InputRequiredResult(
                input_requests={waits.DECISION: types.ElicitRequest(params=question)},
                request_state=recorded.id,
            )
        try:
            answer = await ctx.session.elicit_form(
                question.message, question.requested_schema, related_request_id=ctx.request_id
            )
        except Exception as error:  # the client failed to ask: the wait stays open
            log.info("could not ask the MCP client about %s: %s", recorded.id, error)
            answer = None
        decided = waits.decision(answer)
        if decided is None:
            return _tool_result(waits.waiting_result(recorded))
        return _tool_result(await waits.decide(deps, recorded.id, *decided))

    async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        sessions.check_era(ctx)
        sessions.session(ctx).log_level = params.level
        return types.EmptyResult()

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        sessions.check_era(ctx)
        view = await sessions.surface(ctx).view()
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=o.item.name,
                    title=o.item.title or None,
                    description=o.item.description or None,
                    arguments=[
                        types.PromptArgument(
                            name=a.name, description=a.description or None, required=a.required
                        )
                        for a in o.item.arguments
                    ],
                )
                for o in offered.listed_prompts(view)
            ]
        )

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        sessions.check_era(ctx)
        view = await sessions.surface(ctx).view()
        try:
            prompt = offered.prompt(params.name, view)
            messages = await render(
                prompt, params.arguments, limits.tool_timeout, limits.max_result_bytes
            )
        except OfferError as error:
            raise MCPError(error.code, str(error)) from None
        return types.GetPromptResult(
            description=prompt.item.description or None,
            messages=[
                types.PromptMessage(role=role, content=types.TextContent(type="text", text=text))
                for role, text in messages
            ],
        )

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        sessions.check_era(ctx)
        view = await sessions.surface(ctx).view()
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=o.item.uri,
                    name=o.item.name,
                    description=o.item.description or None,
                    mime_type=o.item.mime_type,
                )
                for o in offered.listed_resources(view)
            ]
        )

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        sessions.check_era(ctx)
        view = await sessions.surface(ctx).view()
        try:
            resource = offered.resource(str(params.uri), view)
            value = await read(resource, limits.tool_timeout, limits.max_result_bytes)
        except OfferError as error:
            raise MCPError(error.code, str(error)) from None
        uri, mime = resource.item.uri, resource.item.mime_type
        contents: types.TextResourceContents | types.BlobResourceContents = (
            types.TextResourceContents(uri=uri, mime_type=mime, text=value)
            if isinstance(value, str)
            else types.BlobResourceContents(uri=uri, mime_type=mime, blob=blob(value))
        )
        return types.ReadResourceResult(contents=[contents])

    async def no_discover(ctx: Any, params: Any) -> Any:
        # A 2026-07-28 client then falls back to the initialize handshake: that era has
        # sessions (one thread each) and delivers tools/list_changed on the session.
        raise sessions.refusal(METHOD_NOT_FOUND)

    server = _Exported(
        "oracle",
        version=_version(),
        instructions=oracle.system_prompt,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts if offered.prompts else None,
        on_get_prompt=get_prompt if offered.prompts else None,
        on_list_resources=list_resources if offered.resources else None,
        on_read_resource=read_resource if offered.resources else None,
        on_subscriptions_listen=ListenHandler(bus) if bus is not None else None,
    )
    # Registered here rather than as on_set_logging_level, which the SDK marks deprecated
    # for 2026-07-28 (a warning at construction); the handshake era still uses it.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    if sessions.thread_id is None:  # HTTP: stdio decides its era by the first request
        server.add_request_handler("server/discover", types.RequestParams, no_discover)
    return server


_MODERN = frozenset({"2026-07-28"})
"""Protocol revisions on which a call asks the client through an ``InputRequiredResult``."""


def _tool_result(result: ToolResult) -> Any:
    """A tool result as MCP's ``CallToolResult`` (JSON objects also as structured content)."""
    import mcp.types as types

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result.content)],
        structured_content=_structured(result.content) if not result.is_error else None,
        is_error=result.is_error,
    )


def _not_ours(name: str) -> ToolResult:
    """The answer to a retry whose ``request_state`` names no approval of this session."""
    message = (
        "this call's request_state names no approval of this session's thread: call the tool "
        "again without it"
    )
    return failed_call("", name, message)


def _structured(content: str) -> dict[str, Any] | None:
    """The result as structured content when it is a JSON object (meta-tools answer JSON)."""
    if not content.startswith("{"):
        return None
    try:
        value = json.loads(content)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _version() -> str:
    from oracle_core.version import __version__

    return str(__version__)
