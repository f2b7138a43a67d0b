"""Middleware: plugin code that runs around every model call and tool call of a run.

The vocabulary follows pydantic-ai: ``before_*`` may return a replacement (or ``None`` to
keep what it got), ``after_*`` observe, ``wrap_*`` surround the call and may pass a changed
value to ``call_next`` or replace the result, and ``on_error`` hears about failures. Every
value a middleware receives is immutable (:class:`~oracle_core.ModelRequest`,
:class:`~oracle_core.ToolCall`, :class:`~oracle_core.ToolResult`): change one by returning
``value.replace(...)``.

Order is fixed: each plugin's middleware in plugin registration order, and within a plugin
in the order its ``oracle_middleware`` returned. ``before_*`` and ``wrap_*`` run in that
order; ``after_*`` runs in reverse.

The capability gate is not a middleware: the run loop applies it itself, against the tool
list actually sent to the provider, before any middleware sees a tool call and again for
every call a middleware replaced. ``before_tool_call`` and ``after_tool_call`` see every
tool call, refused ones included (``result.refused``); ``wrap_tool_call`` sees only the
calls the gate lets through, so no middleware can get a hidden tool run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from oracle_core.values.messages import ModelRequest, ModelResponse, ToolCall, ToolResult

ModelHandler = Callable[[ModelRequest], Awaitable[ModelResponse]]
"""``call_next`` of :meth:`Middleware.wrap_model_call`."""

ToolHandler = Callable[[ToolCall], Awaitable[ToolResult]]
"""``call_next`` of :meth:`Middleware.wrap_tool_call`."""


class Middleware:
    """Base class for middleware; override only the methods you need.

    Attributes:
        plugin: the name of the plugin that contributed it (set by the core).
    """

    plugin: str = ""

    async def before_model_call(self, request: ModelRequest) -> ModelRequest | None:
        """Called before each model call; return a changed copy of ``request``, or ``None``.

        A tool a middleware adds to ``request.tools`` is sent to the provider, but a call to
        it is refused: only tools the gate chose may run.
        """
        return None

    async def after_model_call(self, request: ModelRequest, response: ModelResponse) -> None:
        """Called after each model call with the request as sent and the model's response."""

    async def wrap_model_call(
        self, request: ModelRequest, call_next: ModelHandler
    ) -> ModelResponse:
        """Surround a model call; call ``await call_next(request)`` to make it."""
        return await call_next(request)

    async def before_tool_call(self, call: ToolCall) -> ToolCall | None:
        """Called before each tool call, refused ones included; return a changed copy, or ``None``.

        A changed call is checked against the gate again; a refused call stays refused.
        """
        return None

    async def after_tool_call(self, call: ToolCall, result: ToolResult) -> None:
        """Called after each tool call with its result (``result.refused`` if the gate refused)."""

    async def wrap_tool_call(self, call: ToolCall, call_next: ToolHandler) -> ToolResult:
        """Surround a tool call the gate allowed; call ``await call_next(call)`` to run it."""
        return await call_next(call)

    async def on_error(self, error: BaseException, request: ModelRequest | ToolCall) -> None:
        """Called when a model call or a tool call raised (before the run handles it)."""
