"""Runs that need a credential: they wait for it, resume once when it is set, never leak it."""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from connections_plugin import PLUGIN_CODE, fingerprint
from connections_world import ALICE_KEY, ORG_KEY, World, ask
from support import SitePackages

from oracle_core import (
    Connection,
    PluginManifest,
    ToolContext,
    UnknownConnectionError,
    hookimpl,
    tool,
)
from oracle_core.credentials.vault import SECRET_KEY_VARIABLE, generate_key
from oracle_core.store import SQLiteCheckpointer

BOB_KEY = "ghp_bob_0a1b2c3d4e5f60718293"
SECRETS = (ALICE_KEY, BOB_KEY, ORG_KEY)


@pytest.fixture
async def world(site: SitePackages) -> AsyncIterator[World]:
    made = World(site, generate_key())
    yield made
    for oracle in made.oracles:
        await oracle.close()


async def test_a_missing_credential_stops_the_run_waiting_for_it(world: World) -> None:
    oracle = world.oracle()
    events = [e.to_json() async for e in oracle.stream("t1", "call whoami", user_id="alice")]

    done = events[-1]
    (requested,) = [e for e in events if e["type"] == "connection_requested"]
    operation = requested["operation"]
    assert done["status"] == "waiting_for_connection"
    assert done["operations"][0]["id"] == operation["id"]
    assert operation["kind"] == "connection" and operation["status"] == "pending"
    assert (operation["plugin"], operation["tool"], operation["user_id"]) == (
        "vaulted",
        "whoami",
        "alice",
    )
    assert operation["details"] == {
        "connection": "token",
        "connection_kind": "api_key",
        "per_user": True,
        "help": "A personal access token from Settings > Tokens.",
        "missing": ["token"],
        "user_id": "alice",
    }
    assert "oracle connections set vaulted token --user alice" in operation["reason"]
    assert world.calls() == []
    assert len(world.model.requests) == 1  # the model was not asked again: the run stopped


async def test_supplying_it_resumes_the_run_once_and_a_second_supply_runs_nothing(
    world: World,
) -> None:
    oracle = world.oracle()
    waiting = await ask(oracle, "t1", "alice", "whoami")

    resumed = await oracle.supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")
    again = await oracle.supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")

    assert waiting.status == "waiting_for_connection"
    assert [(r.run_id, r.status, r.answer) for r in resumed] == [
        (waiting.run_id, "completed", "Done.")
    ]
    assert again == []
    assert world.calls() == [{"tool": "whoami", "user": "alice", "key": fingerprint(ALICE_KEY)}]
    (operation,) = await oracle.operations()
    assert operation.status == "supplied"
    assert f"signed in with key {fingerprint(ALICE_KEY)}" in world.model.last_request.tool_results


async def test_two_supplies_at_once_resume_the_run_once(world: World) -> None:
    oracle = world.oracle()
    other = world.oracle()  # another oracle on the same SQLite file: as another process
    await ask(oracle, "t1", "alice", "whoami")

    first, second = await asyncio.gather(
        oracle.supply_credential("vaulted", "token", ALICE_KEY, user_id="alice"),
        other.supply_credential("vaulted", "token", ALICE_KEY, user_id="alice"),
    )

    assert sorted([len(first), len(second)]) == [0, 1]
    assert len(world.calls()) == 1


async def test_one_users_credential_is_never_used_for_another(world: World) -> None:
    oracle = world.oracle()
    await oracle.supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")

    alice = await ask(oracle, "ta", "alice", "whoami")
    bob = await ask(oracle, "tb", "bob", "whoami")
    no_resume = await oracle.supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")
    (bob_done,) = await oracle.supply_credential("vaulted", "token", BOB_KEY, user_id="bob")

    assert alice.status == "completed"
    assert bob.status == "waiting_for_connection"
    assert no_resume == []
    assert bob_done.status == "completed"
    assert world.calls() == [
        {"tool": "whoami", "user": "alice", "key": fingerprint(ALICE_KEY)},
        {"tool": "whoami", "user": "bob", "key": fingerprint(BOB_KEY)},
    ]


async def test_a_shared_connection_serves_every_user_and_resumes_every_waiting_run(
    world: World,
) -> None:
    oracle = world.oracle()
    alice = await ask(oracle, "ta", "alice", "org_report")
    bob = await ask(oracle, "tb", "bob", "org_report")

    resumed = await oracle.supply_credential("vaulted", "org", ORG_KEY, user_id="whoever")
    carol = await ask(oracle, "tc", "carol", "org_report")

    assert (alice.status, bob.status) == ("waiting_for_connection",) * 2
    assert sorted(r.run_id for r in resumed) == sorted([alice.run_id, bob.run_id])
    assert carol.status == "completed"
    assert sorted(c["user"] for c in world.calls()) == ["alice", "bob", "carol"]
    assert {c["key"] for c in world.calls()} == {fingerprint(ORG_KEY)}
    assert (await oracle.operations())[0].details["user_id"] is None


async def test_a_call_needing_two_missing_connections_waits_for_each_then_runs_once(
    world: World,
) -> None:
    oracle = world.oracle()
    waiting = await ask(oracle, "t1", "alice", "both")

    (after_token,) = await oracle.supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")
    (after_org,) = await oracle.supply_credential("vaulted", "org", ORG_KEY)

    assert waiting.operations[0].details["missing"] == ["token", "org"]
    assert after_token.status == "waiting_for_connection"
    assert after_token.operations[0].details["connection"] == "org"
    assert after_org.status == "completed"
    assert world.calls() == [
        {"tool": "both", "user": "alice", "keys": [fingerprint(ALICE_KEY), fingerprint(ORG_KEY)]}
    ]


async def test_a_deleted_credential_is_waited_for_again(world: World) -> None:
    oracle = world.oracle()
    await oracle.supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")
    assert await oracle.delete_credential("vaulted", "token", user_id="alice") is True

    result = await ask(oracle, "t1", "alice", "whoami")

    assert result.status == "waiting_for_connection"
    assert world.calls() == []


async def test_a_tool_needing_no_connection_runs_without_a_key(world: World) -> None:
    oracle = world.oracle(**{SECRET_KEY_VARIABLE: ""})
    world.model.reply_tool_call("plain", {"text": "x"})
    world.model.reply_text("ok")

    result = await oracle.run("t1", "just plain", user_id="alice")

    assert result.status == "completed"
    assert world.model.last_request.tool_results == ["plain x"]


async def test_the_value_reaches_no_model_request_no_file_text_no_log_and_no_json(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    oracle = world.oracle()
    results = [await ask(oracle, "t1", "alice", "whoami", "leaky")]
    results += await oracle.supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")
    results.append(await ask(oracle, "t1", "alice", "leaky!", "peek"))
    await oracle.supply_credential("vaulted", "org", ORG_KEY)
    results.append(await ask(oracle, "t2", "alice", "both"))
    operations = [o.to_json() for o in await oracle.operations()]
    statuses = [s.to_json() for s in await oracle.connection_statuses()]
    await oracle.close()

    assert [r.status for r in results] == ["waiting_for_connection", "completed"] * 1 + [
        "completed",
        "completed",
    ]
    tool_results = [m["content"] for r in world.model.requests for m in r.messages
                    if m.get("role") == "tool"]  # fmt: skip
    assert any("**********" in text for text in tool_results)  # the careless tool's Secret
    assert any("the service refused **********" in text for text in tool_results)
    assert any("does not list" in text and "'org'" in text for text in tool_results)  # peek
    everything = "\n".join(
        [
            world.model_text(),
            world.stored_bytes().decode("utf-8", "replace"),
            caplog.text,
            json.dumps([r.to_json() for r in results]),
            json.dumps(operations),
            json.dumps(statuses),
            repr(results),
        ]
    )
    for secret in SECRETS[:1] + SECRETS[2:]:
        assert secret not in everything
        assert secret[-10:] not in everything


async def test_a_wrong_key_refuses_the_call_clearly_and_nothing_runs(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    await world.oracle().supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")
    oracle = world.oracle(**{SECRET_KEY_VARIABLE: generate_key()})

    result = await ask(oracle, "t1", "alice", "whoami")

    assert result.status == "completed"  # the model is told, and answers
    assert world.calls() == []
    (tool_message,) = world.model.last_request.tool_results
    assert "whoami did not run" in tool_message and "cannot be decrypted" in tool_message
    assert SECRET_KEY_VARIABLE in tool_message
    assert "cannot be decrypted" in caplog.text and SECRET_KEY_VARIABLE in caplog.text
    assert ALICE_KEY not in tool_message + caplog.text


async def test_a_tampered_stored_value_refuses_the_call_and_nothing_runs(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    import sqlite3

    oracle = world.oracle()
    await oracle.supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")
    db = sqlite3.connect(Path(world.env["ORACLE_HOME"]) / "oracle.db")
    db.execute("UPDATE oracle_credentials SET sealed = substr(sealed, 1, 60) || 'AAAA' || "
               "substr(sealed, 65)")  # fmt: skip
    db.commit()
    db.close()

    result = await ask(oracle, "t1", "alice", "whoami")

    assert world.calls() == []
    assert result.status == "completed"
    assert "was altered" in world.model.last_request.tool_results[0]
    assert "was altered" in caplog.text
    assert ALICE_KEY not in caplog.text


async def test_a_missing_key_refuses_a_call_whose_credential_is_stored(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    await world.oracle().supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")
    oracle = world.oracle(**{SECRET_KEY_VARIABLE: ""})

    await ask(oracle, "t1", "alice", "whoami")

    assert world.calls() == []
    (tool_message,) = world.model.last_request.tool_results
    assert "ORACLE_SECRET_KEY is not set" in tool_message
    assert "oracle connections keygen" in tool_message


class Shifted:
    """The wall clock, shifted by ``offset`` seconds (a store's clock in the past)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


async def test_a_supply_that_died_before_resuming_is_carried_on_by_the_next_once(
    world: World,
) -> None:
    clock = Shifted()
    store = SQLiteCheckpointer(Path(world.env["ORACLE_HOME"]) / "oracle.db", clock=clock)
    oracle = world.oracle(checkpointer=store)
    (operation,) = (await ask(oracle, "t1", "alice", "whoami")).operations
    clock.offset = -3600  # an hour ago, a supplier stored it, won the set, and died
    await oracle.credentials.set("vaulted", Connection(name="token"), ALICE_KEY, "alice")
    await store.update_operation(operation.id, expect={"pending"}, status="supplied")
    clock.offset = 0

    (resumed,) = await oracle.supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")
    again = await oracle.supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")

    assert (resumed.run_id, resumed.status) == (operation.run_id, "completed")
    assert again == []
    assert len(world.calls()) == 1


async def test_credentials_of_a_removed_plugin_are_listed_as_undeclared_and_can_be_deleted(
    world: World,
) -> None:
    await world.oracle().supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")
    await world.oracle().supply_credential("vaulted", "org", ORG_KEY)
    without = world.oracle(ORACLE_LOAD_PLUGINS="")

    listed = [s.to_json() for s in await without.connection_statuses()]
    deleted = [
        await without.delete_credential("vaulted", "token", user_id="alice"),
        await without.delete_credential("vaulted", "org", user_id="anyone"),
    ]

    assert [(s["plugin"], s["connection"], s["user_id"], s["declared"]) for s in listed] == [
        ("vaulted", "org", None, False),
        ("vaulted", "token", "alice", False),
    ]
    assert deleted == [True, True]
    with pytest.raises(UnknownConnectionError, match="no plugin 'vaulted' is loaded"):
        await without.delete_credential("vaulted", "token", user_id="alice")


async def test_a_plugin_author_tests_a_tool_by_supplying_a_test_credential(
    oracle_factory: Any, site: SitePackages
) -> None:
    from oracle_core.testing import call_tool

    site.add("oracle-plugin-vaulted", PLUGIN_CODE, entry_point="vaulted")
    importlib.invalidate_caches()  # the module was written after the folder joined sys.path

    oracle = oracle_factory("oracle_plugin_vaulted", env={SECRET_KEY_VARIABLE: generate_key()})
    await oracle.supply_credential("vaulted", "token", "test-key")

    assert await call_tool(oracle, "whoami") == f"signed in with key {fingerprint('test-key')}"


async def test_an_approved_call_then_waits_for_its_connection_and_runs_once(
    world: World,
) -> None:
    oracle = world.oracle()
    (approval,) = (await ask(oracle, "t1", "alice", "delete_repo")).operations

    after_approval = await oracle.decide(approval.id, approve=True)
    (connection,) = after_approval.operations
    (done,) = await oracle.supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")

    assert approval.kind == "approval"
    assert after_approval.status == "waiting_for_connection"
    assert connection.details["connection"] == "token"
    assert connection.arguments == approval.arguments
    assert done.status == "completed"
    assert world.calls() == [
        {"tool": "delete_repo", "user": "alice", "key": fingerprint(ALICE_KEY), "repo": "octo/demo"}
    ]


class Neighbour:
    """Another plugin declaring a connection of the same name, `token`."""

    __name__ = "neighbour"

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(
            name="neighbour",
            summary="Another service.",
            when_to_use=["tests"],
            visibility="always",
            connections=[Connection(name="token")],
        )

    @hookimpl
    def oracle_tools(self) -> list[Any]:
        @tool(connections=["token"])
        def neighbour_call(ctx: ToolContext) -> str:
            """Uses the neighbour's token."""
            return "neighbour " + fingerprint(ctx.credential("token").reveal())

        return [neighbour_call]


async def test_a_tool_never_gets_another_plugins_credential_of_the_same_name(
    world: World,
) -> None:
    oracle = world.oracle(plugins=(Neighbour(),))
    await oracle.supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")

    waiting = await ask(oracle, "t1", "alice", "neighbour_call")
    (resumed,) = await oracle.supply_credential("neighbour", "token", BOB_KEY, user_id="alice")

    assert waiting.status == "waiting_for_connection"
    assert waiting.operations[0].plugin == "neighbour"
    assert resumed.status == "completed"
    assert world.model.last_request.tool_results == [f"neighbour {fingerprint(BOB_KEY)}"]
