"""The middleware that writes every model call and tool call of every thread to the trail.

Auditing must never cost a user their answer: a write that fails (a locked or full disk, a
broken file) is logged and the run goes on. Failures of the calls themselves are recorded
and then passed on untouched.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from functools import partial

from oracle_core import Middleware, ModelRequest, ModelResponse, ToolCall, ToolResult
from oracle_core.authoring.middleware import ModelHandler
from oracle_plugin_audit.store import AuditStore

log = logging.getLogger("oracle_plugin_audit")

_MAX_PENDING = 10_000
"""Tool calls started but not finished that are remembered (a guard against leaks)."""


def _describe(error: BaseException) -> str:
    # The runtime hands a failure from further in to wrap_* middleware inside a carrier whose
    # ``error`` attribute holds the original; report the original.
    inner = getattr(error, "error", None)
    if isinstance(inner, BaseException):
        error = inner
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _error_of(result: ToolResult) -> str | None:
    if not result.is_error:
        return None
    try:
        decoded = json.loads(result.content)
    except json.JSONDecodeError:
        return result.content
    if isinstance(decoded, dict) and isinstance(decoded.get("error"), str):
        return str(decoded["error"])
    return result.content


class AuditMiddleware(Middleware):
    """Records model calls (in ``wrap_model_call``) and tool calls (``before``/``after``).

    Tool calls are timed from ``before_tool_call`` to ``after_tool_call``, which see every
    call the model asked for, including those the capability gate refused.

    Args:
        store: where to write.
    """

    def __init__(self, store: AuditStore) -> None:
        self.store = store
        self._started: dict[tuple[str, str], tuple[float, float]] = {}

    async def wrap_model_call(
        self, request: ModelRequest, call_next: ModelHandler
    ) -> ModelResponse:
        """Time the model call and record it, with its error if it fails."""
        started_at, started = time.time(), time.perf_counter()
        try:
            response = await call_next(request)
        except BaseException as error:
            self._model_call(request, None, started_at, started, _describe(error))
            raise
        self._model_call(request, response, started_at, started, None)
        return response

    async def before_tool_call(self, call: ToolCall) -> None:
        """Note when the call started."""
        if len(self._started) >= _MAX_PENDING:
            self._started.pop(next(iter(self._started)))
        self._started[(call.run_id, call.id)] = (time.time(), time.perf_counter())

    async def after_tool_call(self, call: ToolCall, result: ToolResult) -> None:
        """Record the call with its outcome: run, failed or refused."""
        now = (time.time(), time.perf_counter())
        started_at, started = self._started.pop((call.run_id, call.id), now)
        self._safely(
            "a tool call",
            call.thread_id,
            partial(
                self.store.record_tool_call,
                thread_id=call.thread_id,
                run_id=call.run_id,
                call_id=call.id,
                name=call.name,
                arguments=call.arguments,
                refused=result.refused,
                is_error=result.is_error,
                error=_error_of(result),
                latency_ms=(now[1] - started) * 1000,
                started_at=started_at,
            ),
        )

    def _model_call(
        self,
        request: ModelRequest,
        response: ModelResponse | None,
        started_at: float,
        started: float,
        error: str | None,
    ) -> None:
        latency_ms = (time.perf_counter() - started) * 1000
        calls = response.tool_calls if response is not None else []
        self._safely(
            "a model call",
            request.thread_id,
            partial(
                self.store.record_model_call,
                thread_id=request.thread_id,
                run_id=request.run_id,
                step=request.step,
                model=request.model,
                tools=[t.name for t in request.tools],
                tool_calls=[
                    {
                        "name": str(c.get("function", {}).get("name", "")),
                        "arguments": str(c.get("function", {}).get("arguments") or ""),
                    }
                    for c in calls
                ],
                prompt_tokens=response.usage.prompt_tokens if response is not None else None,
                completion_tokens=response.usage.completion_tokens
                if response is not None
                else None,
                latency_ms=latency_ms,
                error=error,
                started_at=started_at,
            ),
        )

    def _safely(self, what: str, thread_id: str, write: Callable[[], None]) -> None:
        try:
            write()
        except Exception:
            log.warning(
                "audit: could not record %s of thread %r in %s; the run goes on",
                what,
                thread_id,
                self.store.path,
                exc_info=True,
            )
