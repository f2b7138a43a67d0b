"""A child process for tests/test_processes.py: an oracle on a shared SQLite file.

Not a test module: the tests run it with ``python process_child.py <role> ...``.

- ``writer DB THREAD TURNS PAUSE READY GO LOG OUT``: start an oracle, write ``READY``, wait
  for ``GO`` to appear, then run ``TURNS`` turns on ``THREAD``, ``PAUSE`` seconds apart (a
  user's think time: without it one process would take every turn before the other polls
  again). Each turn's model calls the ``note`` tool once (it appends the run id to ``LOG``),
  then answers. What each stream ended with is written to ``OUT`` as JSON.
- ``crasher DB THREAD MARKER``: run one turn on ``THREAD`` whose tool writes ``MARKER`` and
  kills the process with ``os._exit(1)``, mid-run, its lease held (``lease_ttl=0.5``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from oracle_core import (
    Model,
    ModelRequest,
    ModelResponse,
    Oracle,
    PluginManifest,
    RunFinished,
    RunLimits,
    Settings,
    SQLiteCheckpointer,
    Tool,
    hookimpl,
    tool,
)
from oracle_core.models.base import assistant_message, tool_call


class OneToolThenText(Model):
    """Step 1 calls ``tool_name`` with the run id; step 2 answers text."""

    name = "one-tool-then-text"

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.step == 1:
            call = tool_call(self.tool_name, {"text": request.run_id}, f"call_{request.run_id}")
            return ModelResponse(assistant_message(None, [call]))
        return ModelResponse(assistant_message("noted", None))


class Kit:
    """An always plugin holding one tool."""

    def __init__(self, kit_tool: Tool) -> None:
        self.tool = kit_tool

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(
            name="kit", summary="A kit.", when_to_use=["tests"], visibility="always"
        )

    @hookimpl
    def oracle_tools(self) -> list[Tool]:
        return [self.tool]


def build(db: str, kit_tool: Tool, limits: RunLimits) -> Oracle:
    return Oracle(
        [Kit(kit_tool)],
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(Path(db).parent / f"home-{os.getpid()}")}),
        model=OneToolThenText(kit_tool.name),
        checkpointer=SQLiteCheckpointer(db),
        limits=limits,
    )


def writer(
    db: str, thread: str, turns: str, pause: str, ready: str, go: str, log: str, out: str
) -> None:
    @tool
    def note(text: str) -> str:
        """Note a text."""
        with Path(log).open("a") as handle:
            handle.write(text + "\n")
        return f"noted {text}"

    async def turn(oracle: Oracle, number: int) -> dict[str, Any]:
        events = [e async for e in oracle.stream(thread, f"turn {number} of {os.getpid()}")]
        last = events[-1]
        finished = last if isinstance(last, RunFinished) else None
        return {
            "ended_with_final_event": finished is not None,
            "final_events": sum(isinstance(e, RunFinished) for e in events),
            "status": finished.status if finished else None,
            "error": finished.error if finished else None,
        }

    oracle = build(db, note, RunLimits())
    outcomes: list[dict[str, Any]] = []
    with asyncio.Runner() as runner:
        runner.run(oracle.start())  # imports, plugins and the file opened before the start line
        Path(ready).write_text("ready")
        while not Path(go).exists():
            time.sleep(0.001)
        for number in range(int(turns)):
            if number:
                time.sleep(float(pause))
            outcomes.append(runner.run(turn(oracle, number)))
        runner.run(oracle.close())
    Path(out).write_text(json.dumps(outcomes))


async def crasher(db: str, thread: str, marker: str) -> None:
    @tool
    def crash(text: str) -> str:
        """Die mid-run."""
        Path(marker).write_text(text)
        os._exit(1)

    async with build(db, crash, RunLimits(lease_ttl=0.5)) as oracle:
        await oracle.run(thread, "crash now")


if __name__ == "__main__":
    role, *args = sys.argv[1:]
    if role == "writer":
        writer(*args)
    else:
        asyncio.run(crasher(*args))
