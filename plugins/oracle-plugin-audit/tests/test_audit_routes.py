"""The audit routes' filters, limits and errors, as an HTTP client sees them."""

from __future__ import annotations

import httpx
import pytest

from oracle_core import Oracle
from oracle_core.testing import ScriptedModel, run_turn


@pytest.fixture
async def two_threads(oracle: Oracle, oracle_model: ScriptedModel) -> None:
    """Thread ``a`` with three model calls (one refused tool call), thread ``b`` with one."""
    oracle_model.reply_tool_call("roll")
    oracle_model.reply_tool_call("list_capabilities")
    oracle_model.reply_text("Done.")
    oracle_model.reply_text("Hello.")

    await run_turn(oracle, "roll", thread="a")
    await run_turn(oracle, "hi", thread="b")


@pytest.mark.usefixtures("two_threads")
async def test_calls_without_a_thread_cover_every_thread(client: httpx.AsyncClient) -> None:
    response = await client.get("/plugins/audit/calls")

    calls = response.json()["model_calls"]
    assert [c["thread_id"] for c in calls] == ["b", "a", "a", "a"]


@pytest.mark.usefixtures("two_threads")
async def test_limit_caps_the_calls_returned(client: httpx.AsyncClient) -> None:
    response = await client.get("/plugins/audit/calls", params={"thread_id": "a", "limit": 2})

    assert [c["step"] for c in response.json()["model_calls"]] == [3, 2]


@pytest.mark.usefixtures("two_threads")
async def test_tools_filter_by_refusal_across_threads(client: httpx.AsyncClient) -> None:
    response = await client.get("/plugins/audit/tools", params={"refused": "yes"})

    assert [(c["thread_id"], c["name"]) for c in response.json()["tool_calls"]] == [("a", "roll")]


@pytest.mark.parametrize("limit", ["abc", "0", "1001", "-5", "2.5"])
async def test_a_bad_limit_is_a_400_saying_what_fits(client: httpx.AsyncClient, limit: str) -> None:
    response = await client.get("/plugins/audit/calls", params={"limit": limit})

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "bad_request"
    assert error["message"] == f"limit must be a whole number from 1 to 1000, not {limit!r}"


async def test_a_bad_refused_filter_is_a_400(client: httpx.AsyncClient) -> None:
    response = await client.get("/plugins/audit/tools", params={"refused": "maybe"})

    assert response.status_code == 400
    assert response.json()["error"]["message"] == "refused must be true or false, not 'maybe'"


async def test_an_unknown_thread_is_a_404(client: httpx.AsyncClient) -> None:
    response = await client.get("/plugins/audit/threads/nope")

    assert response.status_code == 404
    assert response.json()["error"]["message"] == "the audit trail has no call of thread 'nope'"


async def test_an_empty_trail_has_an_empty_summary(client: httpx.AsyncClient) -> None:
    response = await client.get("/plugins/audit/summary")

    assert response.json() == {
        "threads": [],
        "totals": {
            "threads": 0,
            "model_calls": 0,
            "model_errors": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "tool_calls": 0,
            "refusals": 0,
            "tool_errors": 0,
        },
    }


async def test_a_wrong_token_is_refused(client: httpx.AsyncClient) -> None:
    response = await client.get("/plugins/audit/summary", headers={"Authorization": "Bearer wrong"})

    assert response.status_code == 401
