"""A silent plugin contributes middleware and routes while the model never sees it.

One scripted conversation: the model calls a hidden tool (refused), loads its capability,
calls it, and answers. The audit routes then show what the model was shown on each call,
the refusal and the tokens.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from oracle_core import Oracle
from oracle_core.testing import (
    ScriptedModel,
    assert_tool_called,
    run_turn,
)

META = ["list_capabilities", "load_capability", "search_capabilities"]


@pytest.fixture
async def conversation(oracle: Oracle, oracle_model: ScriptedModel) -> None:
    """Thread ``t1``: a refused call, a load, the same call again, then the answer."""
    oracle_model.reply_tool_call("roll", {"sides": 6}, usage=(100, 5))
    oracle_model.reply_tool_call("load_capability", {"names": ["dice"]}, usage=(120, 6))
    oracle_model.reply_tool_call("roll", {"sides": 6}, usage=(150, 7))
    oracle_model.reply_text("You rolled a 4.", usage=(170, 8))

    result = await run_turn(oracle, "roll a die", thread="t1")

    assert result.answer == "You rolled a 4."


async def get(client: httpx.AsyncClient, path: str, **params: Any) -> Any:
    response = await client.get(f"/plugins/audit{path}", params=params)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.usefixtures("conversation")
async def test_calls_show_the_tools_shown_on_each_model_call(client: httpx.AsyncClient) -> None:
    calls = (await get(client, "/calls", thread_id="t1"))["model_calls"]

    assert [c["step"] for c in calls] == [4, 3, 2, 1]  # newest first
    shown = {c["step"]: c["tools"] for c in calls}
    assert shown[1] == META
    assert shown[2] == META
    assert shown[3] == [*META, "roll"]
    assert shown[4] == [*META, "roll"]


@pytest.mark.usefixtures("conversation")
async def test_calls_show_what_the_model_asked_for_and_the_tokens(
    client: httpx.AsyncClient,
) -> None:
    calls = (await get(client, "/calls", thread_id="t1"))["model_calls"][::-1]

    assert [c["tool_calls"] for c in calls] == [
        [{"name": "roll", "arguments": {"sides": 6}}],
        [{"name": "load_capability", "arguments": {"names": ["dice"]}}],
        [{"name": "roll", "arguments": {"sides": 6}}],
        [],
    ]
    assert [(c["prompt_tokens"], c["completion_tokens"]) for c in calls] == [
        (100, 5),
        (120, 6),
        (150, 7),
        (170, 8),
    ]
    assert all(c["error"] is None and c["latency_ms"] >= 0 for c in calls)
    assert {c["run_id"] for c in calls} == {calls[0]["run_id"]}


@pytest.mark.usefixtures("conversation")
async def test_tools_show_the_refusal(client: httpx.AsyncClient) -> None:
    [refused] = (await get(client, "/tools", thread_id="t1", refused="true"))["tool_calls"]
    allowed = (await get(client, "/tools", thread_id="t1", refused="false"))["tool_calls"]

    assert refused["name"] == "roll"
    assert refused["arguments"] == {"sides": 6}
    assert refused["is_error"] is True
    assert 'load_capability({"names": ["dice"]})' in refused["error"]
    assert [(c["name"], c["is_error"]) for c in allowed] == [
        ("roll", False),
        ("load_capability", False),
    ]


@pytest.mark.usefixtures("conversation")
async def test_thread_shows_every_call_in_order(client: httpx.AsyncClient) -> None:
    thread = await get(client, "/threads/t1")

    assert [(e["kind"], e.get("step") or e["name"]) for e in thread["events"]] == [
        ("model_call", 1),
        ("tool_call", "roll"),
        ("model_call", 2),
        ("tool_call", "load_capability"),
        ("model_call", 3),
        ("tool_call", "roll"),
        ("model_call", 4),
    ]
    assert [e["refused"] for e in thread["events"] if e["kind"] == "tool_call"] == [
        True,
        False,
        False,
    ]


@pytest.mark.usefixtures("conversation")
async def test_summary_counts_calls_refusals_and_tokens(client: httpx.AsyncClient) -> None:
    summary = await get(client, "/summary")

    [thread] = summary["threads"]
    assert thread["thread_id"] == "t1"
    assert {k: v for k, v in thread.items() if k not in ("thread_id", "last_at")} == {
        "model_calls": 4,
        "model_errors": 0,
        "prompt_tokens": 540,
        "completion_tokens": 26,
        "tool_calls": 3,
        "refusals": 1,
        "tool_errors": 0,
    }
    assert summary["totals"]["threads"] == 1


@pytest.mark.usefixtures("conversation")
async def test_routes_need_the_servers_token(client: httpx.AsyncClient) -> None:
    for path in ("/calls", "/tools", "/threads/t1", "/summary"):
        response = await client.get(f"/plugins/audit{path}", headers={"Authorization": ""})
        assert response.status_code == 401, path


async def test_the_model_never_sees_the_audit_plugin(
    oracle: Oracle, oracle_model: ScriptedModel
) -> None:
    oracle_model.reply_tool_call("list_capabilities")
    oracle_model.reply_tool_call("load_capability", {"names": ["audit"]})
    oracle_model.reply_text("Done.")

    result = await run_turn(oracle, "what can you do?", thread="t2")

    listed = json.loads(assert_tool_called(result, "list_capabilities").content)
    refused = json.loads(assert_tool_called(result, "load_capability").content)
    assert [c["name"] for c in listed] == ["dice"]
    assert refused == {
        "error": "'audit' is internal and cannot be loaded. Nothing was loaded; "
        "call list_capabilities() for the names."
    }
    assert [r.tool_names for r in oracle_model.requests] == [META, META, META]
    assert "audit" not in oracle_model.request(1).system_prompt


async def test_a_refused_load_of_audit_is_recorded_too(
    oracle: Oracle, oracle_model: ScriptedModel, client: httpx.AsyncClient
) -> None:
    oracle_model.reply_tool_call("load_capability", {"names": ["audit"]}).reply_text("Done.")

    await run_turn(oracle, "load the audit", thread="t3")

    [load] = (await get(client, "/tools", thread_id="t3"))["tool_calls"]
    assert (load["name"], load["refused"], load["is_error"]) == ("load_capability", False, True)
    assert "internal" in load["error"]
