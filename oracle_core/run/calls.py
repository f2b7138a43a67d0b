"""A tool call about to run: its prepared value, the wait hook, and background starts.

The executor (:mod:`oracle_core.run.executor`) prepares a call the gate allowed
(:func:`prepare_call`: validated, canonical arguments and their digest), asks the wait
checks about it in order (:func:`first_wait`; the first :class:`Wait` wins), and either
answers that it waits (:func:`waiting_result`), starts it in the background
(:class:`BackgroundStarter`), or runs it. The checks and the background work themselves
live in :mod:`oracle_core.run.waits`, which builds on these values; the executor knows
only the protocols.

A :class:`WaitCheck` looks at a :class:`PreparedCall` and answers ``None`` (run it) or a
:class:`Wait` (do not run it: save it as an operation and stop the run until the wait is
settled). A call that waited runs later with exactly the saved arguments, asked of every
check again except the kinds it already passed (:attr:`PreparedCall.satisfied`): an
approved call that then lacks a credential waits again, as a connection.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic_core import to_jsonable_python

from oracle_core.authoring.context import ToolContext
from oracle_core.plugins.registry import BoundTool
from oracle_core.values.messages import ToolCall, ToolResult
from oracle_core.values.operations import (
    Operation,
    OperationKind,
    canonical_json,
    digest_of,
    new_operation_id,
)

WaitKind = Literal["approval", "connection"]
"""What a call waits for: a person's approval, or a credential."""


@dataclass(frozen=True)
class PreparedCall:
    """A tool call the gate allowed and whose arguments validated, about to run.

    Attributes:
        call: the call (its ``arguments`` text as the model or the saved operation had it).
        bound: the tool and its plugin.
        arguments: the validated keyword arguments (Python values), as the tool gets them.
        canonical: those arguments as canonical JSON: what an operation saves and runs.
        digest: the SHA-256 of ``canonical``.
        context: the :class:`~oracle_core.ToolContext` the call would get.
        satisfied: wait kinds this call already passed (``{"approval"}`` for an approved call).
    """

    call: ToolCall
    bound: BoundTool
    arguments: Mapping[str, Any]
    canonical: str
    digest: str
    context: ToolContext
    satisfied: frozenset[str] = frozenset()

    def operation(self, kind: OperationKind, status: str, now: float, **fields: Any) -> Operation:
        """A new operation holding this call, made at ``now`` (``fields``: e.g. ``reason``)."""
        call, bound = self.call, self.bound
        return Operation(
            id=new_operation_id(),
            kind=kind,
            status=status,
            thread_id=call.thread_id,
            run_id=call.run_id,
            user_id=call.user_id,
            plugin=bound.plugin.name,
            tool=bound.name,
            call_id=call.id,
            arguments=self.canonical,
            digest=self.digest,
            created_at=now,
            updated_at=now,
            **fields,
        )


@dataclass(frozen=True)
class Wait:
    """What a call must wait for before it may run.

    Attributes:
        kind: ``approval`` or ``connection``.
        reason: why, for a person (``"tool delete_file needs approval (oracle.toml)"``);
            never a secret.
        deadline: seconds from now after which a pending approval counts as denied
            (``None``: no deadline).
        details: kind-specific, JSON-ready facts saved in the operation's ``details`` (a
            connection's ``connection``, ``connection_kind``, ``help``); never secrets.
    """

    kind: WaitKind
    reason: str
    deadline: float | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class WaitCheck(Protocol):
    """One kind of wait the runtime asks about every call (the wait hook)."""

    @property
    def kind(self) -> WaitKind:
        """The wait kind it answers for; a call whose ``satisfied`` holds it is not asked."""
        ...

    def applies(self, bound: BoundTool) -> bool:
        """Whether calls of ``bound`` may ever wait on this check (asked once per tool, cached).

        Answer ``False`` for tools that can never wait, so their calls pay nothing.
        """
        ...

    async def check(self, call: PreparedCall) -> Wait | None:
        """``None`` to let ``call`` run, or the :class:`Wait` it must wait for.

        Must not raise for anything the call did: an exception is logged and the call is
        refused with an error (it neither runs nor waits).
        """
        ...


class BackgroundStarter(Protocol):
    """Starts a call that passed every wait check as background work, and answers at once."""

    async def start(
        self, prepared: PreparedCall, seconds: float | None, cap: Callable[[str], str]
    ) -> ToolResult:
        """Start ``prepared``; the result names the running operation.

        Args:
            prepared: the call, validated and past every wait check.
            seconds: how long the work may take (``None``: the starter's own limit).
            cap: cuts a result to the oracle's result limit.
        """
        ...

    async def cancel(self, operation_id: str, reason: str = "cancelled") -> Operation:
        """Cancel a background operation (a person's decision reaches the work through here)."""
        ...


async def first_wait(checks: Sequence[WaitCheck], call: PreparedCall) -> Wait | None:
    """The first wait any of ``checks`` answers for ``call``, asking them in order."""
    for check in checks:
        if check.kind in call.satisfied:
            continue
        wait = await check.check(call)
        if wait is not None:
            return wait
    return None


def prepare_call(
    call: ToolCall,
    bound: BoundTool,
    arguments: Mapping[str, Any],
    context: ToolContext,
    satisfied: frozenset[str] = frozenset(),
) -> PreparedCall:
    """Validate ``arguments`` for ``bound`` and make them canonical.

    Raises:
        ToolArgumentsError: when the arguments do not fit the tool's schema.
    """
    validated = bound.tool.validate(arguments)
    canonical = canonical_json(to_jsonable_python(validated))
    return PreparedCall(call, bound, validated, canonical, digest_of(canonical), context, satisfied)


def waiting_result(prepared: PreparedCall, wait: Wait) -> ToolResult:
    """The result of a call that must wait: not run; it carries the ``pending`` operation.

    The run loop saves the operation and stops; the content is never saved or sent.
    """
    now = time.time()
    details = dict(wait.details)
    if prepared.satisfied:
        details["satisfied"] = sorted(prepared.satisfied)
    operation = prepared.operation(
        wait.kind,
        "pending",
        now,
        reason=wait.reason,
        deadline=None if wait.deadline is None else now + wait.deadline,
        details=details,
    )
    content = json.dumps({"waiting": f"waiting_for_{wait.kind}", "operation": operation.id})
    return ToolResult(prepared.call.id, prepared.call.name, content, operation=operation)
