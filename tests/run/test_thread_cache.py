"""A turn reads only what is new in its thread, and never serves a stale one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from support import ToolsPlugin

from oracle_core import (
    Model,
    ModelRequest,
    ModelResponse,
    Oracle,
    Settings,
    SQLiteCheckpointer,
    tool,
)
from oracle_core.models.base import assistant_message, tool_call
from oracle_core.values.tokens import count_message_tokens, count_tokens


@tool
def shout(text: str) -> str:
    """Shout the text."""
    return text.upper() + "!"


class Echo(Model):
    """Calls ``shout`` on the user's words, then answers with what it saw."""

    name = "echo"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        user = next(m for m in reversed(request.messages) if m["role"] == "user")
        if request.step == 1:
            call = tool_call("shout", {"text": str(user["content"])}, f"c{len(self.requests)}")
            return ModelResponse(assistant_message(None, [call]))
        seen = [str(m["content"]) for m in request.messages if m["role"] == "user"]
        return ModelResponse(assistant_message(" | ".join(seen), None))


def oracle_on(path: Path, model: Model, home: Path) -> Oracle:
    return Oracle(
        [ToolsPlugin(shout)],
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(home)}),
        model=model,
        checkpointer=SQLiteCheckpointer(path),
    )


async def test_the_token_split_agrees_with_a_fresh_count_of_what_is_sent(tmp_path: Path) -> None:
    model = Echo()
    oracle = oracle_on(tmp_path / "o.db", model, tmp_path)

    splits = []
    for turn in range(4):
        result = await oracle.run("t", f"turn {turn} \ud83d with some words")
        splits += [e.tokens for e in result.events if e.type == "model_call"]

    instructions = count_tokens(oracle.instructions)
    for request, split in zip(model.requests, splits, strict=True):
        fresh = instructions + sum(count_message_tokens(m) for m in request.messages)
        assert split["messages"] == fresh
    state = await oracle.checkpointer.load("t")
    assert state.message_tokens == [count_message_tokens(m) for m in state.messages]
    await oracle.close()


async def test_a_turn_sees_what_another_process_appended_to_its_thread(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    here, there = Echo(), Echo()
    first = oracle_on(path, here, tmp_path / "a")
    second = oracle_on(path, there, tmp_path / "b")

    await first.run("t", "one")
    await second.run("t", "two")
    result = await first.run("t", "three")

    assert result.answer == "one | two | three"
    assert [m["role"] for m in here.requests[-1].messages].count("tool") == 3
    await first.close()
    await second.close()


async def test_a_thread_deleted_and_written_again_elsewhere_is_read_afresh(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    here, there = Echo(), Echo()
    first = oracle_on(path, here, tmp_path / "a")
    await first.run("t", "old one")
    await first.run("t", "old two")
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM oracle_messages WHERE thread_id = 't'")
        db.execute("DELETE FROM oracle_runs WHERE thread_id = 't'")
    second = oracle_on(path, there, tmp_path / "b")
    for text in ("new one", "new two", "new three"):  # longer than what the cache holds
        await second.run("t", text)

    result = await first.run("t", "four")

    assert result.answer == "new one | new two | new three | four"
    await first.close()
    await second.close()
