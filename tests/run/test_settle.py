"""One settle shape (run/waits/settle.py): decide, supply, cancel, each over RunDeps and
each ending in the same resume, exactly once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from waits_support import (
    CallsThenText,
    Kit,
    build_oracle,
    counting_tool,
    error_of,
    executions,
    tool_messages,
)

from oracle_core import (
    Connection,
    DecisionConflictError,
    OperationError,
    PluginManifest,
    Settings,
    SQLiteCheckpointer,
    ToolContext,
    hookimpl,
    tool,
)
from oracle_core.credentials.vault import SECRET_KEY_VARIABLE, generate_key
from oracle_core.oracle import Oracle
from oracle_core.run.waits import settle


async def waiting_operation(oracle: Oracle) -> Any:
    """Run a turn that waits for an approval; its one operation."""
    result = await oracle.run("t", "please delete a.txt")
    assert result.status == "waiting_for_approval", result.error
    (operation,) = result.operations
    return operation


async def test_decide_over_run_deps_records_once_and_resumes_once(db: Path, log: Path) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        operation = await waiting_operation(oracle)
        deps = await oracle.run_deps()

        first = await settle.decide(deps, operation.id, approve=True)
        again = await settle.decide(deps, operation.id, approve=True)
        with pytest.raises(DecisionConflictError):
            await settle.decide(deps, operation.id, approve=False)
        settled = await settle.get(deps, operation.id)

    assert first.status == again.status == "completed"
    assert again.answer == first.answer == "done: deleted a.txt"
    assert executions(log) == ["a.txt"]
    assert settled.status == "approved" and settled.resumed_at is not None


async def test_a_denial_over_run_deps_answers_the_call_declined(db: Path, log: Path) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        operation = await waiting_operation(oracle)
        result = await settle.decide(
            await oracle.run_deps(), operation.id, approve=False, reason="not today"
        )
        state = await oracle.checkpointer.load("t")

    assert result.status == "completed"
    declined = error_of(tool_messages(state.messages)[-1])
    assert declined == "A person declined this call; it did not run. Reason: not today"
    assert executions(log) == []


async def test_cancel_over_run_deps_ends_the_run_cancelled_once(db: Path, log: Path) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        operation = await waiting_operation(oracle)
        deps = await oracle.run_deps()

        cancelled = await settle.cancel(deps, operation.id)
        again = await settle.cancel(deps, operation.id)
        state = await oracle.checkpointer.load("t")

    assert cancelled.status == again.status == "cancelled"
    assert cancelled.outcome is not None and cancelled.outcome["status"] == "cancelled"
    assert [r.status for r in state.runs] == ["cancelled"]
    assert "cancelled" in error_of(tool_messages(state.messages)[-1])
    assert executions(log) == []


async def test_resuming_an_open_operation_is_refused(db: Path, log: Path) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        operation = await waiting_operation(oracle)
        with pytest.raises(OperationError, match="still pending: settle it first"):
            await settle.resume(await oracle.run_deps(), operation.id)


@tool(connections=["token"])
def whoami(context: ToolContext) -> str:
    """Say who the token belongs to."""
    return f"token of {len(context.credential('token').reveal())} characters"


class Vaulted:
    """A code plugin whose tool needs a shared connection."""

    name = "vaulted"

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(
            name="vaulted",
            summary="A vault.",
            when_to_use=["tests"],
            visibility="always",
            connections=[Connection(name="token", per_user=False, help="A token.")],
        )

    @hookimpl
    def oracle_tools(self) -> list[Any]:
        return [whoami]


def vault_oracle(db: Path, model: CallsThenText) -> Oracle:
    home = db.parent / "home"
    home.mkdir(exist_ok=True)
    env = {"ORACLE_HOME": str(home), SECRET_KEY_VARIABLE: generate_key()}
    return Oracle(
        [Vaulted()],
        entry_points=False,
        settings=Settings.from_env(env),
        model=model,
        checkpointer=SQLiteCheckpointer(db),
    )


async def test_supply_over_run_deps_resumes_the_waiting_run_once(db: Path) -> None:
    model = CallsThenText([("whoami", {})])
    async with vault_oracle(db, model) as oracle:
        waited = await oracle.run("t", "who am I?")
        assert waited.status == "waiting_for_connection"

        async def running() -> Any:
            return await oracle.run_deps()

        args = (oracle.credentials, oracle.registry, running, "vaulted", "token")
        (resumed,) = await settle.supply(
            *args, "abcdef", operations=oracle.checkpointer, user_id="ana", grace=30.0
        )
        again = await settle.supply(
            *args, "abcdef", operations=oracle.checkpointer, user_id="ana", grace=30.0
        )

    assert resumed.status == "completed"
    assert resumed.answer == "done: token of 6 characters"
    assert again == []


async def test_storing_a_credential_no_run_waits_on_starts_nothing(db: Path) -> None:
    oracle = vault_oracle(db, CallsThenText())
    asked: list[str] = []

    async def running() -> Any:
        asked.append("deps")
        return await oracle.run_deps()

    resumed = await settle.supply(
        oracle.credentials, oracle.registry, running, "vaulted", "token", "abcdef",
        operations=oracle.checkpointer, user_id="ana", grace=30.0,
    )  # fmt: skip

    assert resumed == [] and asked == [] and not oracle.started
    assert [s.set for s in await oracle.connection_statuses()] == [True]
    await oracle.close()
