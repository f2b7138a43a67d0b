"""The middleware chain: every plugin's middleware, called in the documented order.

An error a middleware raises itself becomes a :class:`~oracle_core.MiddlewareError` naming
its plugin. Errors that come out of ``call_next`` (the model, the tool, inner middleware)
pass through unchanged, so a middleware may catch them as they are (e.g. retry a
``ModelError``) and no layer is blamed for another's failure.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from oracle_core.authoring.middleware import Middleware, ModelHandler, ToolHandler
from oracle_core.errors import MiddlewareError
from oracle_core.values.messages import ModelRequest, ModelResponse, ToolCall, ToolResult

log = logging.getLogger("oracle_core.run")

T = TypeVar("T")

_INNER = "_oracle_raised_further_in"


def _mark_inner(error: BaseException) -> None:
    """Mark ``error`` as raised further in, so an outer middleware is not blamed for it."""
    with contextlib.suppress(AttributeError):  # a type that forbids attributes: best effort
        setattr(error, _INNER, True)


async def _guard(middleware: Middleware, method: str, call: Awaitable[T]) -> T:
    try:
        return await call
    except MiddlewareError:
        raise
    except Exception as error:
        if getattr(error, _INNER, False):
            raise
        raise MiddlewareError(middleware, method, error) from error


def _replacement(middleware: Middleware, method: str, value: Any, kind: type) -> Any:
    if value is not None and not isinstance(value, kind):
        raise MiddlewareError(
            middleware,
            method,
            TypeError(
                f"returned {type(value).__name__}: return a {kind.__name__} (a changed copy "
                "made with .replace(...)) or None"
            ),
        )
    return value


class MiddlewareChain:
    """The plugins' middleware in order, as one immutable sequence.

    Args:
        middleware: each plugin's middleware in plugin registration order.
    """

    def __init__(self, middleware: Sequence[Middleware] = ()) -> None:
        self._items: tuple[Middleware, ...] = tuple(middleware)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Any:
        return iter(self._items)

    # -- model calls ------------------------------------------------------------------------

    async def before_model(self, request: ModelRequest) -> ModelRequest:
        """``before_model_call`` of each middleware in order; each may replace the request."""
        for item in self._items:
            changed = await _guard(item, "before_model_call", item.before_model_call(request))
            request = _replacement(item, "before_model_call", changed, ModelRequest) or request
        return request

    async def wrap_model(self, request: ModelRequest, inner: ModelHandler) -> ModelResponse:
        """Make the model call through every ``wrap_model_call``; the first is outermost."""
        response: ModelResponse = await self._wrapped("wrap_model_call", inner)(request)
        return response

    async def after_model(self, request: ModelRequest, response: ModelResponse) -> None:
        """``after_model_call`` of each middleware, in reverse order."""
        for item in reversed(self._items):
            await _guard(item, "after_model_call", item.after_model_call(request, response))

    # -- tool calls -------------------------------------------------------------------------

    async def before_tool(self, call: ToolCall) -> ToolCall:
        """``before_tool_call`` of each middleware in order; each may replace the call."""
        for item in self._items:
            changed = await _guard(item, "before_tool_call", item.before_tool_call(call))
            call = _replacement(item, "before_tool_call", changed, ToolCall) or call
        return call

    def wrap_tool(self, inner: ToolHandler) -> ToolHandler:
        """``inner`` nested in every ``wrap_tool_call``; the first middleware is outermost."""
        handler: ToolHandler = self._wrapped("wrap_tool_call", inner)
        return handler

    async def run_tool(
        self,
        call: ToolCall,
        handler: ToolHandler,
        refuse: Callable[[ToolCall], ToolResult | None] | None = None,
    ) -> ToolResult:
        """One tool call through the whole chain: ``before``, ``wrap`` around ``handler``, ``after``.

        Args:
            call: the call as the model made it.
            handler: runs the call; already nested in every ``wrap_tool_call``
                (see :meth:`wrap_tool`).
            refuse: given the call as ``before_tool_call`` left it, a refusal result, or
                ``None`` to run it; a refused call never reaches ``wrap_tool_call``.
        """
        seen = await self.before_tool(call)
        result = refuse(seen) if refuse is not None else None
        if result is None:
            result = await handler(seen)
        await self.after_tool(seen, result)
        return result

    async def after_tool(self, call: ToolCall, result: ToolResult) -> None:
        """``after_tool_call`` of each middleware, in reverse order."""
        for item in reversed(self._items):
            await _guard(item, "after_tool_call", item.after_tool_call(call, result))

    async def notify(self, error: BaseException, where: ModelRequest | ToolCall) -> None:
        """Tell every middleware's ``on_error``; an ``on_error`` that raises is only logged."""
        for item in self._items:
            try:
                await item.on_error(error, where)
            except Exception:
                log.exception("on_error of middleware of plugin %r raised", item.plugin)

    def _wrapped(
        self, method: str, inner: Callable[[Any], Awaitable[Any]]
    ) -> Callable[[Any], Awaitable[Any]]:
        handler = inner
        for item in reversed(self._items):

            async def call_next(
                value: Any, handler: Callable[[Any], Awaitable[Any]] = handler
            ) -> Any:
                try:
                    return await handler(value)
                except Exception as error:
                    _mark_inner(error)
                    raise

            def layer(
                value: Any, item: Middleware = item, call_next: Any = call_next
            ) -> Awaitable[Any]:
                return _guard(item, method, getattr(item, method)(value, call_next))

            handler = layer
        return handler
