"""``/operations`` over HTTP, and the OpenAI-compatible endpoint answering a waiting run."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from waits_support import CallsThenText, Kit, build_oracle, counting_tool, executions

from oracle_core import Oracle
from oracle_core.server import create_app

TOKEN = "ops-token-1"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@dataclass
class Served:
    client: httpx.AsyncClient
    oracle: Oracle
    log: Path


@asynccontextmanager
async def served(tmp_path: Path, *batches: Any) -> AsyncIterator[Served]:
    log = tmp_path / "executions.log"
    model = CallsThenText(*(batches or ([("delete", {"path": "a.txt"})],)))
    oracle = build_oracle(tmp_path / "oracle.db", Kit(counting_tool(log)), model=model)
    app = create_app(oracle, tokens=(TOKEN,))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://127.0.0.1", timeout=30
        ) as client:
            yield Served(client, oracle, log)


async def waiting_id(server: Served, thread: str = "t") -> str:
    answer = await server.client.post(
        f"/threads/{thread}/runs", json={"message": "delete a.txt"}, headers=AUTH
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "waiting_for_approval"
    return str(body["operations"][0]["id"])


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/operations"),
        ("GET", "/operations/op_x"),
        ("POST", "/operations/op_x/decision"),
        ("POST", "/operations/op_x/cancel"),
    ],
)
async def test_every_operations_route_needs_the_token(
    tmp_path: Path, method: str, path: str
) -> None:
    async with served(tmp_path) as server:
        operation_id = await waiting_id(server)
        real = path.replace("op_x", operation_id)
        answer = await server.client.request(method, real, json={"approve": True})
        wrong = await server.client.request(
            method, real, json={"approve": True}, headers={"Authorization": "Bearer nope"}
        )
        still = await server.oracle.operation(operation_id)

    assert answer.status_code == wrong.status_code == 401
    assert still.status == "pending"
    assert executions(server.log) == []


async def test_list_and_show_operations(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        operation_id = await waiting_id(server)
        listed = await server.client.get("/operations", headers=AUTH)
        pending = await server.client.get("/operations?status=pending&thread_id=t", headers=AUTH)
        other = await server.client.get("/operations?thread_id=elsewhere", headers=AUTH)
        bad = await server.client.get("/operations?status=nonsense", headers=AUTH)
        shown = await server.client.get(f"/operations/{operation_id}", headers=AUTH)

    assert [o["id"] for o in listed.json()["operations"]] == [operation_id]
    assert [o["id"] for o in pending.json()["operations"]] == [operation_id]
    assert other.json() == {"operations": []}
    assert bad.status_code == 422
    assert shown.json()["arguments"] == {"path": "a.txt"}
    assert (shown.json()["kind"], shown.json()["status"]) == ("approval", "pending")


async def test_a_decision_resumes_the_run_and_a_different_one_is_a_409(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        operation_id = await waiting_id(server)
        path = f"/operations/{operation_id}/decision"
        first = await server.client.post(path, json={"approve": True}, headers=AUTH)
        same = await server.client.post(path, json={"approve": True}, headers=AUTH)
        other = await server.client.post(
            path, json={"approve": False, "reason": "no"}, headers=AUTH
        )

    assert first.status_code == same.status_code == 200
    assert first.json()["run"]["status"] == "completed"
    assert first.json()["run"]["answer"] == same.json()["run"]["answer"] == "done: deleted a.txt"
    assert first.json()["operation"]["status"] == "approved"
    assert other.status_code == 409
    assert other.json()["error"]["type"] == "decision_conflict"
    assert executions(server.log) == ["a.txt"]


async def test_unknown_ids_are_404_and_bad_bodies_422_seeded(tmp_path: Path) -> None:
    rng = random.Random(404)
    async with served(tmp_path) as server:
        operation_id = await waiting_id(server)
        answers = []
        for _ in range(20):
            bad = "op_" + "".join(rng.choice("0123456789abcdef") for _ in range(24))
            answers.append(await server.client.get(f"/operations/{bad}", headers=AUTH))
            answers.append(
                await server.client.post(
                    f"/operations/{bad}/decision", json={"approve": True}, headers=AUTH
                )
            )
        long = await server.client.get(f"/operations/{'x' * 65}", headers=AUTH)
        bodies = [
            {},
            {"approve": "yes"},
            {"approve": True, "reason": 3},
            {"approve": True, "extra": 1},
            [],
        ]
        refused = [
            await server.client.post(
                f"/operations/{operation_id}/decision", json=body, headers=AUTH
            )
            for body in bodies
        ]
        still = await server.oracle.operation(operation_id)

    assert {a.status_code for a in answers} == {404}
    assert {a.json()["error"]["type"] for a in answers} == {"operation_not_found"}
    assert long.status_code == 422
    assert [r.status_code for r in refused] == [422] * len(bodies)
    assert still.status == "pending"


async def test_cancel_over_http(tmp_path: Path) -> None:
    async with served(tmp_path) as server:
        operation_id = await waiting_id(server)
        cancelled = await server.client.post(f"/operations/{operation_id}/cancel", headers=AUTH)
        late = await server.client.post(
            f"/operations/{operation_id}/decision", json={"approve": True}, headers=AUTH
        )

    assert cancelled.json()["operation"]["status"] == "cancelled"
    assert late.status_code == 409
    assert executions(server.log) == []


@pytest.mark.parametrize("stream", [False, True])
async def test_the_openai_endpoint_answers_a_waiting_run_naming_the_operation(
    tmp_path: Path, stream: bool
) -> None:
    async with served(tmp_path) as server:
        answer = await server.client.post(
            "/v1/chat/completions",
            json={
                "model": "oracle",
                "messages": [{"role": "user", "content": "delete a.txt"}],
                "stream": stream,
            },
            headers=AUTH,
        )
        (operation,) = await server.oracle.operations()

    assert answer.status_code == 200, answer.text
    if stream:
        chunks = [
            json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: {")
        ]
        content = "".join(
            c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"]
        )
    else:
        content = answer.json()["choices"][0]["message"]["content"]
        assert answer.json()["status"] == "waiting_for_approval"
        assert answer.json()["operations"][0]["id"] == operation.id
    assert operation.id in content
    assert f"POST /operations/{operation.id}/decision" in content
    assert f"oracle operations approve {operation.id}" in content
