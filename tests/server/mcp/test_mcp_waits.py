"""A call over MCP that must wait for a person. A client that can be asked (elicitation) is
asked, and the approved call runs exactly once through the oracle's decision path; any other
client is told which operation waits and how a person settles it, and a decision there runs
the call once. Driven with the SDK's own client against ``/mcp`` (uvicorn on 127.0.0.1) and
``oracle mcp`` (a real subprocess, 2026-07-28: the question rides an InputRequiredResult)."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install -e '.[mcp]'")

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp_peers import connect, serve
from support import SitePackages

from oracle_core import (
    Connection,
    Oracle,
    PluginManifest,
    Settings,
    ToolContext,
    hookimpl,
    tool,
)
from oracle_core.credentials.vault import SECRET_KEY_VARIABLE, generate_key
from oracle_core.store import MemoryCheckpointer
from oracle_core.testing import ScriptedModel

pytestmark = pytest.mark.slow


class Files:
    """An on-demand plugin whose delete needs a person's approval and whose sync needs a key."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(name="files", summary="Manages files.", when_to_use=["files"],
                              connections=[Connection(name="drive", help="A Drive API key.")])  # fmt: skip

    @hookimpl
    def oracle_tools(self) -> list[Any]:
        @tool(approval=True)
        def delete_folder(folder: str) -> str:
            """Delete a folder."""
            self.deleted.append(folder)
            return f"deleted {folder}"

        @tool(connections=["drive"])
        def sync_drive(ctx: ToolContext) -> str:
            """Sync with Drive."""
            raise AssertionError("ran without its key")

        return [delete_folder, sync_drive]


@dataclass
class Served:
    """The ``/mcp`` URL of a served oracle, its plugin and its oracle."""

    url: str
    files: Files
    oracle: Oracle


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    files = Files()
    env = {"ORACLE_HOME": str(tmp_path), SECRET_KEY_VARIABLE: generate_key()}
    model = ScriptedModel().reply_text("The folder is gone.")  # answers a resumed run
    oracle = Oracle([files], entry_points=False, settings=Settings.from_env(env),
                    checkpointer=MemoryCheckpointer(), model=model)  # fmt: skip
    with serve(oracle) as url:
        yield Served(url, files, oracle)


@dataclass
class Person:
    """An elicitation callback: answers every question the same way, and keeps them."""

    answer: types.ElicitResult
    questions: list[str] = field(default_factory=list)

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        self.questions.append(params.message)
        return self.answer


APPROVE = types.ElicitResult(action="accept", content={"approve": True, "reason": "fine"})


def ask(url: str, person: Person | None = None) -> tuple[Any, Client]:
    """A client of ``url`` that asks ``person`` (without one: a client that cannot ask)."""
    return connect(url, elicitation_callback=person)


async def delete(client: Client) -> Any:
    await client.call_tool("load_capability", {"names": ["files"]})
    return await client.call_tool("delete_folder", {"folder": "archive"})


def test_a_client_that_can_ask_gets_the_approved_calls_result_and_it_ran_once(
    served: Served,
) -> None:
    person = Person(APPROVE)

    async def scenario() -> Any:
        http, client = ask(served.url, person)
        async with http, client:
            return await delete(client)

    result = anyio.run(scenario)

    assert (result.is_error, result.content[0].text) == (False, "deleted archive")
    assert served.files.deleted == ["archive"]
    assert len(person.questions) == 1
    assert 'files.delete_folder({"folder":"archive"})' in person.questions[0]
    [operation] = served.oracle.operations_sync()
    assert (operation.status, operation.reason) == ("approved", "fine (decided in the MCP client)")
    again = served.oracle.decide_sync(operation.id, approve=True)  # the same decision again
    assert again.error is None
    assert served.files.deleted == ["archive"]  # exactly once


def test_a_person_who_declines_in_the_client_denies_the_call_and_it_never_runs(
    served: Served,
) -> None:
    person = Person(types.ElicitResult(action="decline"))

    async def scenario() -> Any:
        http, client = ask(served.url, person)
        async with http, client:
            return await delete(client)

    result = anyio.run(scenario)

    assert result.is_error is True
    assert json.loads(result.content[0].text)["error"].startswith(
        "A person declined this call; it did not run."
    )
    assert served.files.deleted == []
    [operation] = served.oracle.operations_sync()
    assert operation.status == "denied"


def test_a_client_that_cannot_ask_is_told_the_operation_and_a_decision_elsewhere_runs_it_once(
    served: Served,
) -> None:
    api = served.url.removesuffix("/mcp")
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        http, client = ask(served.url)
        async with http, client:
            result = await delete(client)
            seen["result"] = result
            seen["tools"] = [t.name for t in (await client.list_tools()).tools]
            seen["deleted"] = list(served.files.deleted)
            operation = json.loads(result.content[0].text)["operation"]
            decided = await http.post(f"{api}/operations/{operation}/decision",
                                      json={"approve": True})  # fmt: skip
            seen["decided"] = decided.status_code
            outcome = await client.call_tool("get_operation", {"id": operation})
            seen["outcome"] = json.loads(outcome.content[0].text)

    anyio.run(scenario)
    body = json.loads(seen["result"].content[0].text)
    operation = body["operation"]

    assert seen["result"].is_error is False
    assert body["waiting"] == "waiting_for_approval"
    assert f"`oracle operations approve {operation}`" in body["message"]
    assert f"POST /operations/{operation}/decision" in body["message"]
    assert "get_operation" in seen["tools"]  # the thread has an operation now
    assert seen["deleted"] == []
    assert seen["decided"] == 200
    assert served.files.deleted == ["archive"]  # the decision ran it, once
    assert seen["outcome"]["status"] == "approved"


def test_a_missing_connection_is_never_asked_for_through_the_client(served: Served) -> None:
    person = Person(APPROVE)

    async def scenario() -> Any:
        http, client = ask(served.url, person)
        async with http, client:
            await client.call_tool("load_capability", {"names": ["files"]})
            return await client.call_tool("sync_drive", {})

    result = anyio.run(scenario)
    body = json.loads(result.content[0].text)

    assert result.is_error is False
    assert body["waiting"] == "waiting_for_connection"
    assert "`oracle connections set files drive" in body["message"]
    assert "PUT /connections/files/drive" in body["message"]
    assert person.questions == []  # a secret never passes through the client


def test_a_thread_that_already_waits_takes_no_second_wait(served: Served) -> None:
    async def scenario() -> tuple[Any, Any]:
        http, client = ask(served.url)
        async with http, client:
            first = await delete(client)
            second = await client.call_tool("delete_folder", {"folder": "other"})
            return first, second

    first, second = anyio.run(scenario)
    operation = json.loads(first.content[0].text)["operation"]

    assert second.is_error is True
    message = json.loads(second.content[0].text)["error"]
    assert f"waits for operation {operation}" in message
    assert len(served.oracle.operations_sync()) == 1


VAULT = """
from oracle_core import PluginManifest, hookimpl, tool


@tool(approval=True)
def open_vault(door: str) -> str:
    \"\"\"Open a vault door.\"\"\"
    return "opened " + door


@hookimpl
def oracle_manifest():
    return PluginManifest(name="vault", summary="Vault doors.", when_to_use=["the vault"])


@hookimpl
def oracle_tools():
    return [open_vault]
"""


def test_a_2026_client_over_stdio_answers_the_approval_and_gets_the_result(
    site: SitePackages,
) -> None:
    site.add("oracle-plugin-vault", VAULT, entry_point="vault")
    env = {**os.environ, "PYTHONPATH": str(site.root), "ORACLE_HOME": str(site.root / "home"),
           "ORACLE_LOAD_PLUGINS": "vault"}  # fmt: skip
    oracle = str(Path(sys.executable).with_name("oracle"))
    params = StdioServerParameters(command=oracle, args=["mcp"], env=env)
    person = Person(APPROVE)

    async def scenario() -> tuple[str, Any]:
        async with Client(params, elicitation_callback=person, cache=None) as client:
            await client.call_tool("load_capability", {"names": ["vault"]})
            result = await client.call_tool("open_vault", {"door": "north"})
            return client.protocol_version, result

    version, result = anyio.run(scenario)

    assert version == "2026-07-28"
    assert (result.is_error, result.content[0].text) == (False, "opened north")
    assert (
        len(person.questions) == 1 and 'vault.open_vault({"door":"north"})' in person.questions[0]
    )
