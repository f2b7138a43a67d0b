"""Middleware: code that runs around every model call and tool call of a run.

The vocabulary follows pydantic-ai: ``before_*`` and ``after_*`` observe, ``wrap_*`` may
change a request or replace a result, and ``on_error`` hears about failures. Order is fixed:
the capability gate first (it cannot be removed), then each plugin's middleware in plugin
registration order, and within a plugin in the order its ``oracle_middleware`` returned.
``before_*`` and ``wrap_*`` run in that order; ``after_*`` runs in reverse.

``before_tool_call`` and ``after_tool_call`` see every tool call, including those the gate
refuses (``result.refused``); ``wrap_tool_call`` sees only the calls the gate lets through,
so no middleware can run a hidden tool.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from oracle_core.run.messages import ModelRequest, ModelResponse, ToolCall, ToolResult

ModelHandler = Callable[[ModelRequest], Awaitable[ModelResponse]]
ToolHandler = Callable[[ToolCall], Awaitable[ToolResult]]


class Middleware:
    """Base class for middleware; override only the methods you need.

    Attributes:
        plugin: the name of the plugin that contributed it (set by the core).
    """

    plugin: str = ""

    async def before_model_call(self, request: ModelRequest) -> None:
        """Called before each model call, after the gate has chosen the tools."""

    async def after_model_call(self, request: ModelRequest, response: ModelResponse) -> None:
        """Called after each model call with the model's response."""

    async def wrap_model_call(
        self, request: ModelRequest, call_next: ModelHandler
    ) -> ModelResponse:
        """Surround a model call; call ``await call_next(request)`` to make it."""
        return await call_next(request)

    async def before_tool_call(self, call: ToolCall) -> None:
        """Called before each tool call the model asked for, refused ones included."""

    async def after_tool_call(self, call: ToolCall, result: ToolResult) -> None:
        """Called after each tool call with its result (``result.refused`` if the gate refused)."""

    async def wrap_tool_call(self, call: ToolCall, call_next: ToolHandler) -> ToolResult:
        """Surround a tool call the gate allowed; call ``await call_next(call)`` to run it."""
        return await call_next(call)

    async def on_error(self, error: BaseException, request: ModelRequest | ToolCall) -> None:
        """Called when a model call or a tool call raised (before the run handles it)."""
