"""The tool executor: everything about running one tool call, in one place.

Decoding the model's JSON arguments, finding what runs for the call's name (a meta-tool or
a plugin tool, through the run's :class:`~oracle_core.capabilities.state.CapabilityState`),
validating the arguments against the tool's schema, the wait checks, the tool's
:class:`~oracle_core.ToolContext`, its timeout, the cap on what it returns, and turning
every failure into an error tool message the model can act on. The run loop and the test
harness's ``call_tool`` both run calls through it.

The executor does not apply the capability gate: the run loop does, before it hands a call
over (see :mod:`oracle_core.capabilities.gate`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from oracle_core.authoring.context import ToolContext
from oracle_core.capabilities.state import Capabilities, CapabilityState
from oracle_core.errors import OracleError, ToolArgumentsError, ToolError
from oracle_core.plugins.registry import BoundTool, Registry
from oracle_core.run.calls import (
    BackgroundStarter,
    WaitCheck,
    first_wait,
    prepare_call,
    waiting_result,
)
from oracle_core.run.pool import PoolExhaustedError, SyncToolPool
from oracle_core.values.limits import RunLimits
from oracle_core.values.messages import ToolCall, ToolResult, content_of
from oracle_core.values.text import MAX_JSON_DEPTH, clean_json, json_depth
from oracle_core.values.tool_errors import error_result as error_result

# error_result is named here too: the loop, the MCP surface and the conformance checks
# imported it from this module before it moved to oracle_core.values.tool_errors.

if TYPE_CHECKING:
    from oracle_core.authoring.host import OracleHandle

log = logging.getLogger("oracle_core.run")

ErrorListener = Callable[[BaseException, ToolCall], Awaitable[None]]
"""Told about a tool that raised unexpectedly (the middleware chain's ``on_error``)."""


def decode_arguments(call: ToolCall, limit: int | None = None) -> dict[str, Any]:
    """The call's arguments as a JSON object.

    Raises:
        ToolArgumentsError: for anything that is not a JSON object, however it fails
            (bad JSON, nesting too deep, numbers too long, a list instead of an object),
            and for arguments longer than ``limit`` bytes.
    """
    text = call.arguments
    if limit is not None and over(text, limit):
        raise ToolArgumentsError(
            f"the arguments of {call.name} are longer than the limit of {limit} bytes; "
            "send shorter arguments"
        )
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep(call) from None
    except ValueError as error:  # JSONDecodeError is a ValueError
        raise ToolArgumentsError(
            f"the arguments of {call.name} are not valid JSON ({error}); send a JSON object"
        ) from None
    if not isinstance(value, dict):
        raise ToolArgumentsError(
            f"the arguments of {call.name} must be a JSON object, not {type(value).__name__}"
        )
    if json_depth(value, stop=MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise _too_deep(call)
    # ``\ud83d`` escapes decode to lone surrogates: no tool, approval or digest sees one.
    cleaned: dict[str, Any] = clean_json(value)
    return cleaned


def _too_deep(call: ToolCall) -> ToolArgumentsError:
    return ToolArgumentsError(
        f"the arguments of {call.name} nest deeper than {MAX_JSON_DEPTH} levels of objects and "
        "arrays, the most a tool takes: send flatter arguments"
    )


async def _within(function: Callable[[], Any], seconds: float, context: ToolContext) -> Any:
    """Await an async tool within ``seconds``; the context is marked cancelled when it ends early."""
    try:
        return await asyncio.wait_for(function(), seconds)
    except (TimeoutError, asyncio.CancelledError):
        context.cancellation.set()
        raise


def over(text: str, limit: int) -> bool:
    """Whether ``text`` is longer than ``limit`` UTF-8 bytes (short texts are not encoded)."""
    return len(text) > limit // 4 and len(text.encode("utf-8", "replace")) > limit


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` UTF-8 bytes, with a note saying how much was dropped."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", "ignore")
    dropped = len(data) - len(kept.encode("utf-8", "surrogatepass"))
    return f"{kept}\n[cut: {dropped} more bytes dropped; the result was {len(data)} bytes, over the limit of {limit}]"


class ToolExecutor:
    """Runs one tool call: arguments, validation, context, timeout, size cap, errors.

    Args:
        registry: the plugins whose tools may be run.
        limits: the run limits (default timeout, result cap).
        oracle: the handle tools get as ``ToolContext.oracle``.
        pool: the worker threads sync tools run on (the oracle's own).
        waits: the wait checks, asked in order about every plugin tool call.
        background: starts the calls of background tools.
        capabilities: what the runs' capability states share (default: made from
            ``registry`` and the oracle's settings, without operations).
    """

    def __init__(
        self,
        registry: Registry,
        limits: RunLimits,
        oracle: OracleHandle | None = None,
        pool: SyncToolPool | None = None,
        *,
        waits: Sequence[WaitCheck] = (),
        background: BackgroundStarter | None = None,
        capabilities: Capabilities | None = None,
    ) -> None:
        self.registry = registry
        self.limits = limits
        self.oracle = oracle
        self.pool = pool or SyncToolPool()
        self.waits = tuple(waits)
        self.background = background
        self.capabilities = capabilities or Capabilities(
            registry, settings=oracle.settings if oracle is not None else None
        )
        self._checks: dict[str, tuple[WaitCheck, ...]] = {}  # per tool: the checks that apply

    def context(self, call: ToolCall, bound: BoundTool) -> ToolContext:
        """The :class:`ToolContext` a call of ``bound`` gets."""
        return ToolContext(
            thread_id=call.thread_id,
            run_id=call.run_id,
            plugin=bound.plugin.name,
            config=bound.plugin.config,
            user_id=call.user_id,
            oracle=self.oracle,
            tool=bound.name,
        )

    def checks_for(self, bound: BoundTool) -> tuple[WaitCheck, ...]:
        """The wait checks that may stop a call of ``bound`` (asked once per tool, kept)."""
        checks = self._checks.get(bound.name)
        if checks is None:
            checks = self._checks[bound.name] = tuple(w for w in self.waits if w.applies(bound))
        return checks

    def timeout(self, bound: BoundTool) -> float:
        """Seconds a call of ``bound`` may take."""
        return bound.tool.timeout or self.limits.tool_timeout

    async def execute(
        self,
        call: ToolCall,
        state: CapabilityState,
        on_error: ErrorListener | None = None,
        *,
        satisfied: frozenset[str] = frozenset(),
        digest: str | None = None,
    ) -> ToolResult:
        """Run ``call`` and return its result; never raises for anything the call did.

        Args:
            call: the call, already allowed by the gate.
            state: the run's capabilities (a ``load_capability`` call changes them, so a
                second load in the same model response sees the first).
            on_error: told about a tool that raised something other than a ``ToolError``.
            satisfied: wait kinds the call already passed (a resumed, approved call).
            digest: for a saved call being resumed: the digest its validated arguments
                must still have, or nothing runs.
        """
        try:
            arguments = decode_arguments(call, self.limits.max_text_bytes)
        except ToolArgumentsError as error:
            return error_result(call, str(error), error)
        target = state.resolve(call.name)
        if target is None:
            return error_result(call, f"tool {call.name!r} does not exist")
        if not isinstance(target, BoundTool):  # the core runs it: no context, no waits
            result = await target(call, arguments)
            return result.replace(content=cap(result.content, self.limits.max_result_bytes))
        return await self._run(call, target, arguments, on_error, satisfied, digest)

    async def _run(
        self,
        call: ToolCall,
        bound: BoundTool,
        arguments: dict[str, Any],
        on_error: ErrorListener | None,
        satisfied: frozenset[str],
        digest: str | None,
    ) -> ToolResult:
        """Run a plugin tool's call: the wait checks, then the tool, within its limits."""
        timeout = self.timeout(bound)
        context = self.context(call, bound)
        checks = self.checks_for(bound)
        if checks or bound.tool.background or digest is not None:
            # The wait hook: after the gate and validation, before anything runs.
            try:
                prepared = prepare_call(call, bound, arguments, context, satisfied)
            except ToolArgumentsError as error:
                return error_result(call, str(error), error)
            if digest is not None and prepared.digest != digest:
                message = (
                    f"the saved call of {call.name} no longer validates to the arguments that "
                    "were approved (the tool's parameters changed?); nothing ran"
                )
                return error_result(call, message)
            try:
                wait = await first_wait(checks, prepared)
            except OracleError as error:  # typed: its message is safe and says what to fix
                log.error("%s did not run: %s", call.name, error)
                return error_result(call, f"{call.name} did not run: {error}", error)
            except Exception:
                log.exception("a wait check of %s raised", call.name)
                return error_result(call, f"{call.name} could not be checked, so it did not run")
            if wait is not None:
                return waiting_result(prepared, wait)
            if bound.tool.background and self.background is not None:
                return await self.background.start(
                    prepared,
                    bound.tool.timeout,
                    lambda text: cap(text, self.limits.max_result_bytes),
                )
        try:
            function = bound.tool.bind(arguments, context)
            if bound.tool.is_async:
                value = await _within(function, timeout, context)
            else:
                value = await self.pool.run(
                    function, timeout, context.cancellation, bound.plugin.name
                )
        except (ToolArgumentsError, ToolError, PoolExhaustedError) as error:
            return error_result(call, str(error), error)
        except TimeoutError as error:
            return error_result(call, f"{call.name} timed out after {timeout:g} s", error)
        except Exception as error:
            log.exception("tool %s of plugin %s raised", call.name, bound.plugin.name)
            if on_error is not None:
                await on_error(error, call)
            return error_result(call, f"{call.name} failed: {type(error).__name__}: {error}", error)
        try:
            content = content_of(value)
        except (ValueError, TypeError, RecursionError) as error:  # e.g. a circular structure
            message = f"{call.name} returned a value that cannot be sent as JSON: {error}"
            return error_result(call, message, error)
        return self._done(call, content, value)

    def _done(self, call: ToolCall, content: str, value: Any = None) -> ToolResult:
        return ToolResult(
            call.id, call.name, cap(content, self.limits.max_result_bytes), value=value
        )
