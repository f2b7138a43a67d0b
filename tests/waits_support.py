"""Helpers for the tests of waits (approvals, operations, background calls).

Not a test module: imported by tests/test_approvals*.py, tests/test_operations*.py,
tests/test_background*.py and by the child process tests/waits_child.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from oracle_core import (
    Model,
    ModelRequest,
    ModelResponse,
    Oracle,
    PluginManifest,
    Settings,
    SQLiteCheckpointer,
    Tool,
    hookimpl,
    tool,
)
from oracle_core.models.base import assistant_message, tool_call

Call = tuple[str, dict[str, Any] | str]


class CallsThenText(Model):
    """On a user message: the scripted calls (the next batch each turn); after tool
    results: text naming every tool result of the step (``done: a | b``).

    Every request is recorded in ``requests``.
    """

    name = "calls-then-text"

    def __init__(self, *batches: Sequence[Call]) -> None:
        self.batches = [list(b) for b in batches]
        self.turn = 0
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        last = request.messages[-1] if request.messages else {}
        if last.get("role") == "user" and self.turn < len(self.batches):
            batch = self.batches[self.turn]
            self.turn += 1
            calls = [
                tool_call(name, args, f"call_{self.turn}_{i}")
                for i, (name, args) in enumerate(batch)
            ]
            return ModelResponse(assistant_message(None, calls))
        results = []
        for message in reversed(request.messages):
            if message.get("role") != "tool":
                break
            results.append(str(message.get("content")))
        return ModelResponse(assistant_message("done: " + " | ".join(reversed(results)), None))

    def tool_names(self, index: int = -1) -> list[str]:
        """The tool names shown in request ``index``."""
        return list(self.requests[index].tool_names)


class Kit:
    """A plugin holding the given tools (``always``, unless told otherwise)."""

    def __init__(self, *tools: Tool, name: str = "kit", **manifest: Any) -> None:
        self.name = name
        self.tools = list(tools)
        self.manifest = manifest

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        fields: dict[str, Any] = {"visibility": "always", **self.manifest}
        return PluginManifest(name=self.name, summary="A kit.", when_to_use=["tests"], **fields)

    @hookimpl
    def oracle_tools(self) -> list[Tool]:
        return self.tools


def counting_tool(log: Path, *, name: str = "delete", approval: Any = True) -> Tool:
    """A sync tool that appends ``<path>`` to ``log`` each time it runs (to count executions)."""

    def delete(path: str) -> str:
        """Delete a file."""
        with log.open("a", encoding="utf-8") as handle:
            handle.write(path + "\n")
        return f"deleted {path}"

    delete.__name__ = name
    return tool(approval=approval)(delete)


def executions(log: Path) -> list[str]:
    """What ``counting_tool`` wrote: one line per execution."""
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def build_oracle(
    db: Path,
    *plugins: object,
    model: Model | None = None,
    clock: Callable[[], float] = time.time,
    toml: str | None = None,
    **options: Any,
) -> Oracle:
    """An oracle on the SQLite file ``db`` with ``plugins`` (home next to it)."""
    home = db.parent / "home"
    home.mkdir(exist_ok=True)
    if toml is not None:
        (home / "oracle.toml").write_text(toml, encoding="utf-8")
    return Oracle(
        list(plugins),
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(home)}),
        model=model or CallsThenText(),
        checkpointer=SQLiteCheckpointer(db, clock=clock),
        **options,
    )


def tool_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool messages of a thread, in order."""
    return [m for m in messages if m.get("role") == "tool"]


def error_of(message: dict[str, Any]) -> str:
    """The ``error`` of a tool message's JSON content ("" when it has none)."""
    try:
        return str(json.loads(message["content"]).get("error") or "")
    except (ValueError, AttributeError):
        return ""


class FunctionModel(Model):
    """Answers each request with ``answer(request)``; records every request."""

    name = "function-model"

    def __init__(self, answer: Callable[[ModelRequest], ModelResponse]) -> None:
        self.answer = answer
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return self.answer(request)


def calls(*pairs: Call, prefix: str = "call") -> ModelResponse:
    """A model response calling each ``(name, arguments)``."""
    made = [tool_call(n, a, f"{prefix}_{i}") for i, (n, a) in enumerate(pairs)]
    return ModelResponse(assistant_message(None, made))


def text(content: str) -> ModelResponse:
    """A model response answering ``content``."""
    return ModelResponse(assistant_message(content, None))


def last_tool_json(request: ModelRequest) -> dict[str, Any]:
    """The JSON content of the request's last tool message."""
    for message in reversed(request.messages):
        if message.get("role") == "tool":
            value = json.loads(str(message["content"]))
            return value if isinstance(value, dict) else {"value": value}
    raise AssertionError("the request has no tool message")
