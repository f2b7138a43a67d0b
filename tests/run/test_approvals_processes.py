"""Approvals across processes on one SQLite file: racing deciders, and crashes mid-way.

The children are real Python processes running ``tests/waits_child.py``; every child a
test starts is killed (if still alive) when the test ends. Executions are counted in a
file the tool appends to, whichever process runs it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import Spawn, spawning
from support import wait_until as support_wait_until
from waits_support import Kit, build_oracle, counting_tool, executions

from oracle_core.run.waits.resume import INTERRUPTED_CALL
from oracle_core.values.operations import BACKGROUND_LOST_ERROR

pytestmark = pytest.mark.slow  # runs subprocesses: `pytest -m 'not slow'` skips it

CHILD = Path(__file__).resolve().parents[1] / "waits_child.py"
WAIT = 90.0


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    with spawning(CHILD, wait=WAIT, cwd=CHILD.parent) as start:
        yield start


def finish(child: subprocess.Popen[str]) -> tuple[int, str]:
    output, _ = child.communicate(timeout=WAIT)
    return child.returncode, output


wait_until = functools.partial(support_wait_until, wait=WAIT)
"""Poll a condition until it holds, for at most :data:`WAIT` seconds."""


@pytest.fixture
def requested(tmp_path: Path, spawn: Spawn) -> tuple[Path, Path, str]:
    """A run waiting for approval, made by a process of its own: (db, log, operation id)."""
    db, log, out = tmp_path / "oracle.db", tmp_path / "executions.log", tmp_path / "op"
    code, output = finish(spawn("request", db, log, out))
    assert code == 0, output
    return db, log, out.read_text()


def race(
    tmp_path: Path, spawn: Spawn, db: Path, log: Path, op: str, votes: list[bool]
) -> list[dict]:
    go = tmp_path / "go"
    children = []
    for index, approve in enumerate(votes):
        ready, out = tmp_path / f"{index}.ready", tmp_path / f"{index}.json"
        children.append((spawn("decide", db, log, op, int(approve), ready, go, out), out))
    wait_until(
        lambda: (
            all((tmp_path / f"{i}.ready").exists() for i in range(len(votes)))
            or any(c.poll() is not None for c, _ in children)
        ),
        "every decider is ready",
    )
    go.touch()  # they decide at once
    results = []
    for child, out in children:
        code, output = finish(child)
        assert code == 0, output
        results.append(json.loads(out.read_text()))
    return results


def test_two_processes_approving_at_once_run_the_call_exactly_once(
    tmp_path: Path, spawn: Spawn, requested: tuple[Path, Path, str]
) -> None:
    db, log, op = requested

    outcomes = race(tmp_path, spawn, db, log, op, [True, True])

    assert executions(log) == ["a.txt"]
    assert outcomes[0] == outcomes[1]
    assert outcomes[0]["status"] == "completed"
    assert outcomes[0]["answer"] == "done: deleted a.txt"


def test_two_processes_deciding_differently_at_once_settle_once(
    tmp_path: Path, spawn: Spawn, requested: tuple[Path, Path, str]
) -> None:
    db, log, op = requested

    outcomes = race(tmp_path, spawn, db, log, op, [True, False])

    won = [o for o in outcomes if "status" in o]
    lost = [o for o in outcomes if "conflict" in o]
    assert len(won) == len(lost) == 1
    approved = lost[0]["conflict"] == "approved"
    assert executions(log) == (["a.txt"] if approved else [])
    assert won[0]["status"] == "completed"


async def test_a_crash_between_the_decision_and_the_resume_is_resumed_once_by_the_next_claim(
    spawn: Spawn, requested: tuple[Path, Path, str]
) -> None:
    db, log, op = requested
    code, output = finish(spawn("decide-then-die", db, log, op))
    assert code == 1, output

    async with build_oracle(db, Kit(counting_tool(log))) as oracle:
        recorded = await oracle.operation(op)
        resumed = await oracle.decide(op, approve=True)  # the same decision: it resumes
        again = await oracle.resume_operation(op)

    assert (recorded.status, recorded.resumed_at) == ("approved", None)
    assert resumed.status == again.status == "completed"
    assert resumed.answer == again.answer == "done: deleted a.txt"
    assert executions(log) == ["a.txt"]


async def test_a_process_dying_inside_the_approved_call_never_gets_it_run_twice(
    spawn: Spawn, requested: tuple[Path, Path, str]
) -> None:
    db, log, op = requested
    code, output = finish(spawn("die-in-the-call", db, log, op))
    assert code == 1, output
    assert executions(log) == ["a.txt"]  # it ran, and its process died

    async with build_oracle(db, Kit(counting_tool(log))) as oracle:
        resumed = await oracle.resume_operation(op)  # waits out the dead lease (0.5 s)
        settled = await oracle.operation(op)

    assert resumed.status == "completed"
    assert INTERRUPTED_CALL in resumed.answer
    assert settled.claims == 2 and settled.resumed_at is not None
    assert executions(log) == ["a.txt"]


async def test_a_background_call_whose_process_died_reads_as_failed(
    tmp_path: Path, spawn: Spawn
) -> None:
    db, out = tmp_path / "oracle.db", tmp_path / "op"
    code, output = finish(spawn("background-then-die", db, out))
    assert code == 1, output
    operation_id = out.read_text()

    async with build_oracle(db, Kit()) as oracle:
        deadline = time.monotonic() + WAIT
        while (found := await oracle.operation(operation_id)).status == "running":
            assert time.monotonic() < deadline, "the dead worker's lease never lapsed"
            await asyncio.sleep(0.05)  # its lease lapses 0.5 s after the last renewal

    assert (found.status, found.error) == ("failed", BACKGROUND_LOST_ERROR)
