"""A child process for tests/run/test_approvals_processes.py: an oracle on a shared SQLite file.

Not a test module: the tests run it with ``python waits_child.py <role> ...``.

- ``request DB LOG OUT``: one turn on thread ``t`` whose call needs approval; the
  operation id is written to ``OUT``.
- ``decide DB LOG OP APPROVE READY GO OUT``: write ``READY``, wait for ``GO``, decide ``OP``
  (``APPROVE`` is ``1`` or ``0``) and write the outcome to ``OUT`` as JSON.
- ``decide-then-die DB LOG OP``: record the decision (the store's compare-and-set) and
  die with ``os._exit(1)`` before resuming anything.
- ``background-then-die DB OUT``: start a background call that never ends, write its
  operation id to ``OUT``, and die (``lease_ttl=0.5``): its operation must read as failed.
- ``die-in-the-call DB LOG OP``: decide ``OP``; the approved call writes to ``LOG`` and
  kills the process mid-call, the resume's claim and thread lease held (``lease_ttl=0.5``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from waits_support import CallsThenText, Kit, build_oracle, counting_tool

from oracle_core import DecisionConflictError, RunLimits, tool


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {path}")
        time.sleep(0.005)


async def request(db: Path, log: Path, out: Path) -> None:
    model = CallsThenText([("delete", {"path": "a.txt"})])
    async with build_oracle(db, Kit(counting_tool(log)), model=model) as oracle:
        result = await oracle.run("t", "delete a.txt")
    await asyncio.to_thread(out.write_text, result.operations[0].id)


async def decide(
    db: Path, log: Path, op: str, approve: bool, ready: Path, go: Path, out: Path
) -> None:
    async with build_oracle(db, Kit(counting_tool(log))) as oracle:
        await asyncio.to_thread(ready.touch)
        await asyncio.to_thread(_wait_for, go)
        try:
            result = await oracle.decide(op, approve=approve)
            outcome = {"status": result.status, "answer": result.answer, "error": result.error}
        except DecisionConflictError as error:
            outcome = {"conflict": error.status}
    await asyncio.to_thread(out.write_text, json.dumps(outcome))


async def decide_then_die(db: Path, log: Path, op: str) -> None:
    async with build_oracle(db, Kit(counting_tool(log))) as oracle:
        await oracle.checkpointer.update_operation(op, expect={"pending"}, status="approved")
        os._exit(1)  # the decision is recorded; nothing resumed it


async def die_in_the_call(db: Path, log: Path, op: str) -> None:
    @tool(approval=True)
    def delete(path: str) -> str:
        """Delete a file (and die doing it)."""
        with log.open("a", encoding="utf-8") as handle:
            handle.write(path + "\n")
        os._exit(1)

    limits = RunLimits(lease_ttl=0.5)
    async with build_oracle(db, Kit(delete), limits=limits) as oracle:
        await oracle.decide(op, approve=True)


async def background_then_die(db: Path, out: Path) -> None:
    @tool(background=True)
    async def crunch() -> str:
        """Work forever."""
        await asyncio.Event().wait()
        return "never"

    model = CallsThenText([("crunch", {})])
    async with build_oracle(
        db, Kit(crunch), model=model, limits=RunLimits(lease_ttl=0.5)
    ) as oracle:
        await oracle.run("t", "crunch")
        (operation,) = await oracle.operations()
        await asyncio.to_thread(out.write_text, operation.id)
        os._exit(1)


def main(role: str, *args: str) -> None:
    if role == "request":
        asyncio.run(request(Path(args[0]), Path(args[1]), Path(args[2])))
    elif role == "decide":
        db, log, op, approve, ready, go, out = args
        asyncio.run(
            decide(Path(db), Path(log), op, approve == "1", Path(ready), Path(go), Path(out))
        )
    elif role == "decide-then-die":
        asyncio.run(decide_then_die(Path(args[0]), Path(args[1]), args[2]))
    elif role == "background-then-die":
        asyncio.run(background_then_die(Path(args[0]), Path(args[1])))
    elif role == "die-in-the-call":
        asyncio.run(die_in_the_call(Path(args[0]), Path(args[1]), args[2]))
    else:
        raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main(*sys.argv[1:])
