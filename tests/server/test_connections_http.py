"""``/connections`` over HTTP, and a plugin's OAuth callback route supplying a credential."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from connections_plugin import PLUGIN_CODE, fingerprint
from support import SitePackages

from oracle_core import Oracle, Settings
from oracle_core.credentials.vault import SECRET_KEY_VARIABLE, generate_key
from oracle_core.server import create_app
from oracle_core.testing.script import Reply
from oracle_core.testing.scripted import ModelCall, ScriptedModel

TOKEN = "server-token-1"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
VALUE = "ghp_http_a1b2c3d4e5f6a7b8c9d0"


def call_then_answer(seen: ModelCall) -> Reply | str:
    """Call the tool the user's message names once, then answer."""
    messages = seen.messages
    if messages[-1]["role"] == "user":
        return Reply.call(str(messages[-1]["content"]), {})
    return "Done."


@dataclass
class Server:
    client: httpx.AsyncClient
    oracle: Oracle
    model: ScriptedModel
    log: Path

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


async def serve(site: SitePackages, stack: AsyncExitStack, **env: str) -> Server:
    site.add("oracle-plugin-vaulted", PLUGIN_CODE, entry_point="vaulted")
    log = site.root / "calls.jsonl"
    settings = Settings.from_env(
        {
            "ORACLE_HOME": str(site.root / "home"),
            "ORACLE_LOAD_PLUGINS": "vaulted",
            SECRET_KEY_VARIABLE: generate_key(),
            "ORACLE_PLUGIN_VAULTED__LOG": str(log),
            **env,
        }
    )
    model = ScriptedModel().respond_with(call_then_answer)
    oracle = Oracle(settings=settings, path=[str(site.root)], model=model)
    app = create_app(oracle, tokens=(TOKEN,))
    await stack.enter_async_context(app.router.lifespan_context(app))
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1", timeout=30
    )
    await stack.enter_async_context(client)
    return Server(client, oracle, model, log)


@asynccontextmanager
async def served(site: SitePackages, **env: str) -> AsyncIterator[Server]:
    """The server, started and stopped in the calling task (its lifespan needs one task)."""
    async with AsyncExitStack() as stack:
        yield await serve(site, stack, **env)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/connections"),
        ("PUT", "/connections/vaulted/token"),
        ("DELETE", "/connections/vaulted/token"),
    ],
)
async def test_every_connections_route_needs_the_token(
    site: SitePackages, method: str, path: str
) -> None:
    async with served(site) as server:
        answer = await server.client.request(method, path, json={"value": VALUE})

        assert answer.status_code == 401
        assert VALUE not in answer.text
        assert await server.oracle.checkpointer.credentials() == []


async def test_put_sets_it_get_lists_it_without_the_value_and_delete_removes_it(
    site: SitePackages,
) -> None:
    async with served(site) as server:
        put = await server.client.put(
            "/connections/vaulted/token", json={"value": VALUE, "user_id": "alice"}, headers=AUTH
        )
        listed = await server.client.get("/connections", headers=AUTH)
        alice = await server.client.get("/connections?user_id=alice", headers=AUTH)
        gone = await server.client.delete("/connections/vaulted/token?user_id=alice", headers=AUTH)
        again = await server.client.delete("/connections/vaulted/token?user_id=alice", headers=AUTH)

        assert put.status_code == 200, put.text
        assert put.json() == {
            "plugin": "vaulted",
            "connection": "token",
            "user_id": "alice",
            "set": True,
            "resumed": [],
        }
        token = listed.json()["connections"][0]
        assert (token["connection"], token["user_id"], token["set"]) == ("token", "alice", True)
        assert [(c["connection"], c["set"]) for c in alice.json()["connections"]] == [
            ("token", True),
            ("org", False),
            ("oauth", False),
        ]
        assert gone.status_code == 204
        assert again.status_code == 404 and again.json()["error"]["type"] == "credential_not_set"
        for answer in (put, listed, alice, gone, again):
            assert VALUE not in answer.text


async def test_a_waiting_run_is_resumed_by_the_put_once(site: SitePackages) -> None:
    async with served(site) as server:
        run = await server.client.post(
            "/threads/t1/runs", json={"message": "whoami", "user_id": "alice"}, headers=AUTH
        )
        body = {"value": VALUE, "user_id": "alice"}
        first = await server.client.put("/connections/vaulted/token", json=body, headers=AUTH)
        second = await server.client.put("/connections/vaulted/token", json=body, headers=AUTH)

        assert run.json()["status"] == "waiting_for_connection"
        (resumed,) = first.json()["resumed"]
        assert (resumed["run_id"], resumed["status"]) == (run.json()["run_id"], "completed")
        assert second.json()["resumed"] == []
        assert server.calls() == [{"tool": "whoami", "user": "alice", "key": fingerprint(VALUE)}]
        for answer in (run, first, second):
            assert VALUE not in answer.text


async def test_a_plugins_oauth_callback_route_supplies_the_token_and_resumes(
    site: SitePackages,
) -> None:
    async with served(site) as server:
        run = await server.client.post(
            "/threads/t1/runs", json={"message": "calendar", "user_id": "bob"}, headers=AUTH
        )
        callback = await server.client.get(
            "/plugins/vaulted/oauth/callback", params={"code": "xyz", "state": "bob"}
        )

        assert run.json()["status"] == "waiting_for_connection"
        assert run.json()["operations"][0]["details"]["connection_kind"] == "oauth2"
        assert callback.json() == {"connected": True, "resumed": ["completed"]}
        assert server.calls() == [
            {"tool": "calendar", "user": "bob", "key": fingerprint("oauth-token-for-xyz")}
        ]


@pytest.mark.parametrize(
    ("path", "body", "status", "kind"),
    [
        ("/connections/vaulted/tokn", {"value": VALUE}, 404, "connection_not_found"),
        ("/connections/nope/token", {"value": VALUE}, 404, "connection_not_found"),
        ("/connections/vaulted/token", {"value": ""}, 422, "invalid_credential"),
        ("/connections/vaulted/token", {"value": VALUE + "\n2"}, 422, "invalid_credential"),
        ("/connections/vaulted/token", {"value": VALUE, "user_id": ""}, 422, "invalid_request"),
        ("/connections/vaulted/token", {"value": VALUE, "colour": 1}, 422, "invalid_request"),
        ("/connections/vaulted/token", {"user_id": "alice"}, 422, "invalid_request"),
    ],
)
async def test_bad_puts_are_refused_naming_the_problem_never_the_value(
    site: SitePackages, path: str, body: dict[str, Any], status: int, kind: str
) -> None:
    async with served(site) as server:
        answer = await server.client.put(path, json=body, headers=AUTH)

        assert answer.status_code == status, answer.text
        assert answer.json()["error"]["type"] == kind
        assert VALUE not in answer.text
        assert await server.oracle.checkpointer.credentials() == []


async def test_fuzzed_bodies_never_echo_the_value_nor_fail_the_server(
    site: SitePackages, caplog: pytest.LogCaptureFixture
) -> None:
    async with served(site) as server:
        caplog.set_level(logging.DEBUG)
        rng = random.Random(14)
        shapes: list[Any] = [VALUE, [VALUE], {"v": VALUE}, 12345678901234567890, None, True, 1.5]
        for _ in range(60):
            body: dict[str, Any] = {}
            if rng.random() < 0.9:
                body["value"] = rng.choice(shapes)
            if rng.random() < 0.5:
                body["user_id"] = rng.choice(["bob", "", "a" * 300, 7, None, ["x"], "alice"])
            if rng.random() < 0.2:
                body[rng.choice(["extra", VALUE, "value "])] = VALUE
            raw = json.dumps(body) if rng.random() < 0.9 else json.dumps(body)[:-3]
            answer = await server.client.put(
                "/connections/vaulted/token",
                content=raw,
                headers={**AUTH, "Content-Type": "application/json"},
            )

            assert answer.status_code in (200, 400, 422), (body, answer.text)
            assert VALUE not in answer.text, body
        assert VALUE not in caplog.text


async def test_put_without_a_secret_key_is_a_clear_503(site: SitePackages) -> None:
    async with served(site, **{SECRET_KEY_VARIABLE: ""}) as server:
        answer = await server.client.put(
            "/connections/vaulted/token", json={"value": VALUE}, headers=AUTH
        )

    assert answer.status_code == 503
    assert answer.json()["error"]["type"] == "secret_key_error"
    assert "ORACLE_SECRET_KEY is not set" in answer.json()["error"]["message"]
