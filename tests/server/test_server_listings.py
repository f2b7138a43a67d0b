"""``GET /threads`` and ``GET /plugins`` say what ``oracle threads`` and ``oracle plugins``
say: each thread with its times, messages, tokens and runs (``threads`` keeps the bare ids
for clients that read them), and each imported MCP server's state."""

from __future__ import annotations

import sys
from pathlib import Path

from support import CodePlugin

from oracle_core import MCPServer
from oracle_core.testing.openai_server import FakeOpenAI, Reply

SERVER = str(Path(__file__).parent.parent / "mcp_server.py")


async def test_threads_lists_each_thread_with_its_summary_and_keeps_the_ids(
    serve, fake_openai: FakeOpenAI
) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(Reply.text("first answer"), Reply.text("second answer"))
    served = await serve(CodePlugin("notes"))
    await served.client.post("/threads/older/runs", json={"message": "hi"})
    await served.client.post("/threads/newer/runs", json={"message": "hello there"})

    listed = (await served.client.get("/threads")).json()

    assert listed["threads"] == ["newer", "older"]
    summaries = listed["summaries"]
    assert [s["id"] for s in summaries] == ["newer", "older"]
    expected = {s.thread_id: s for s in await served.oracle.checkpointer.thread_summaries()}
    for row in summaries:
        known = expected[row["id"]]
        assert row["messages"] == known.messages == 2
        assert row["tokens"] == known.tokens > 0
        assert row["runs"] == known.runs == 1
        assert row["updated_at"] == known.updated_at
        assert row["created_at"] == known.created_at


async def test_threads_limit_applies_to_ids_and_summaries_alike(
    serve, fake_openai: FakeOpenAI
) -> None:  # type: ignore[no-untyped-def]
    fake_openai.script(Reply.text("a"), Reply.text("b"))
    served = await serve(CodePlugin("notes"))
    for thread in ("one", "two"):
        await served.client.post(f"/threads/{thread}/runs", json={"message": "hi"})

    listed = (await served.client.get("/threads", params={"limit": 1})).json()

    assert listed["threads"] == ["two"]
    assert [s["id"] for s in listed["summaries"]] == ["two"]


async def test_plugins_shows_an_mcp_servers_state_as_oracle_plugins_does(
    serve,
) -> None:  # type: ignore[no-untyped-def]
    arith = MCPServer("arith", command=sys.executable, args=(SERVER,))
    served = await serve(CodePlugin("notes"), arith)

    plugins = {p["name"]: p for p in (await served.client.get("/plugins")).json()["plugins"]}

    assert plugins["notes"]["mcp"] is None
    state = plugins["arith"]["mcp"]
    assert state["state"] == "idle" and state["transport"] == "stdio"
    assert state["tools"] >= 1 and state["restarts"] == 0 and state["error"] is None
    assert state == {**served.oracle.registry.get("arith").obj.status()}
