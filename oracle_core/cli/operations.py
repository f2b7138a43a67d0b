"""``oracle operations``: list, show, approve, deny and cancel operations.

``approve`` and ``deny`` record the decision and resume the waiting run in this process,
printing its outcome as ``oracle ask`` does (``--json``: the same shape). What a waiting run
waits for, and how to settle it, is written by :func:`waiting_text` (``oracle ask`` uses it).
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from oracle_core.cli.common import build_oracle, echo_json, iso_time, json_option, table
from oracle_core.cli.errors import fail
from oracle_core.values.operations import OPERATION_STATUSES

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle
    from oracle_core.values.operations import Operation
    from oracle_core.values.result import RunResult

T = TypeVar("T")

WAITING_EXIT = 3
"""Exit status of ``oracle ask`` (and of a decision) whose run stopped to wait."""


_TIMES = ("created_at", "updated_at", "deadline", "resumed_at")
"""The fields of an operation that hold a time (Unix seconds), shown as ISO 8601."""


def _call(operation: Operation) -> str:
    return f"{operation.plugin}.{operation.tool}({operation.arguments})"


def waiting_text(result: RunResult) -> str:
    """What a waiting run waits for, and the commands that settle each operation."""
    lines = []
    for operation in result.operations:
        oid = operation.id
        if operation.kind == "connection":
            name = operation.details.get("connection", "?")
            lines.append(
                f"Waiting for connection {name!r} of plugin {operation.plugin!r} "
                f"(operation {oid}): {operation.reason or ''}".rstrip()
            )
            user = (
                f" --user {shlex.quote(operation.user_id)}"
                if operation.details.get("per_user")
                else ""
            )
            lines.append(f"  supply: oracle connections set {operation.plugin} {name}{user}")
        else:
            lines.append(f"Waiting for approval of {_call(operation)} (operation {oid})")
            if operation.reason:
                lines.append(f"  why:     {operation.reason}")
            if operation.deadline:
                lines.append(
                    f"  until:   {iso_time(operation.deadline)} (then it counts as denied)"
                )
            lines.append(f"  approve: oracle operations approve {oid} [--reason TEXT]")
            lines.append(f"  deny:    oracle operations deny {oid} [--reason TEXT]")
        lines.append(f"  cancel:  oracle operations cancel {oid}")
    return "\n".join(lines)


def print_outcome(result: RunResult, as_json: bool, *, streamed: bool = False) -> None:
    """Print a run's outcome as ``oracle ask`` does, and exit non-zero unless it completed.

    Completed: the answer (exit 0; ``streamed``: it was printed as it came). Waiting: what
    it waits for and how to settle it (exit :data:`WAITING_EXIT`). Otherwise the status and
    error on stderr (exit 1).
    """
    if as_json:
        echo_json(result.to_json())
    elif result.status == "completed" and not streamed:
        click.echo(result.answer)
    elif result.status.startswith("waiting_for_"):
        click.echo(waiting_text(result))
    if result.status.startswith("waiting_for_"):
        sys.exit(WAITING_EXIT)
    if result.status != "completed":
        click.echo(f"oracle: run {result.run_id} {result.status}: {result.error}", err=True)
        sys.exit(1)


def _with_oracle(work: Callable[[Oracle], Awaitable[T]], *, model: bool = False) -> T:
    """Run ``work`` with the oracle of the environment; an operation error exits 1."""
    from oracle_core.errors import OperationError

    oracle = build_oracle(require_model=model)

    async def go() -> T:
        async with oracle:
            return await work(oracle)

    try:
        return asyncio.run(go())
    except OperationError as error:
        fail(str(error))


def _row(operation: Operation) -> list[str]:
    return [
        operation.id,
        operation.kind,
        operation.status,
        operation.thread_id,
        f"{operation.plugin}.{operation.tool}",
        iso_time(operation.created_at),
    ]


def _details(operation: Operation) -> str:
    data: dict[str, Any] = operation.to_json()
    for key in _TIMES:
        if data.get(key) is not None:
            data[key] = iso_time(data[key])
    lines = [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in data.items()]
    return "\n".join(lines)


@click.group("operations", invoke_without_command=True)
@click.option("--thread", default=None, help="Only this thread's operations.")
@click.option(
    "--status",
    default=None,
    type=click.Choice(sorted(OPERATION_STATUSES)),
    help="Only operations with this status.",
)
@json_option
@click.pass_context
def operations_group(
    ctx: click.Context, thread: str | None, status: str | None, as_json: bool
) -> None:
    """List operations (approvals, connections, background calls), oldest first."""
    if ctx.invoked_subcommand is not None:
        return
    found = _with_oracle(lambda o: o.operations(thread_id=thread, status=status))
    if as_json:
        echo_json([o.to_json() for o in found])
        return
    if not found:
        click.echo("no operations")
        return
    headers = ["ID", "KIND", "STATUS", "THREAD", "TOOL", "CREATED"]
    click.echo(table([_row(o) for o in found], headers))


@operations_group.command("show")
@click.argument("operation_id", metavar="ID")
@json_option
def show_command(operation_id: str, as_json: bool) -> None:
    """Show one operation: its call, status, reason, result."""
    operation = _with_oracle(lambda o: o.operation(operation_id))
    if as_json:
        echo_json(operation.to_json())
    else:
        click.echo(_details(operation))


reason_option = click.option("--reason", default="", help="Why (the model is told).")
"""``--reason``: the person's reason, ``""`` without one (never the approval's own "why")."""


@operations_group.command("approve")
@click.argument("operation_id", metavar="ID")
@reason_option
@json_option
def approve_command(operation_id: str, reason: str, as_json: bool) -> None:
    """Approve the call of ID: it runs once, with its saved arguments, and the run resumes."""
    result = _with_oracle(lambda o: o.decide(operation_id, approve=True, reason=reason), model=True)
    print_outcome(result, as_json)


@operations_group.command("deny")
@click.argument("operation_id", metavar="ID")
@reason_option
@json_option
def deny_command(operation_id: str, reason: str, as_json: bool) -> None:
    """Deny the call of ID: the model is told a person declined, and the run resumes."""
    result = _with_oracle(
        lambda o: o.decide(operation_id, approve=False, reason=reason), model=True
    )
    print_outcome(result, as_json)


@operations_group.command("cancel")
@click.argument("operation_id", metavar="ID")
@json_option
def cancel_command(operation_id: str, as_json: bool) -> None:
    """Cancel ID: a background call stops; a waiting call is answered as cancelled."""
    operation = _with_oracle(lambda o: o.cancel_operation(operation_id))
    if as_json:
        echo_json(operation.to_json())
    else:
        click.echo(f"{operation.id}: {operation.status}")
