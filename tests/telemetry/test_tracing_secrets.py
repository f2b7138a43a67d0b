"""No connection secret ever reaches a span, even with content on (telemetry/tracing.py): the
vaulted plugin of the connections tests, its credentials supplied, its careless tool
returning and raising with its Secret, traced with ``ORACLE_TRACE_CONTENT=1``."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "opentelemetry.sdk", reason="OpenTelemetry's SDK is not installed: pip install -e '.[otel]'"
)

from collections.abc import AsyncIterator

from connections_world import ALICE_KEY, ORG_KEY, World, ask
from support import SitePackages
from telemetry.test_tracing import Traced, every_value

from oracle_core.credentials.vault import generate_key


@pytest.fixture
async def world(site: SitePackages) -> AsyncIterator[World]:
    made = World(site, generate_key())
    yield made
    for oracle in made.oracles:
        await oracle.close()


async def test_no_credential_value_is_in_any_span_even_with_content_on(world: World) -> None:
    traced = Traced()
    oracle = world.oracle(ORACLE_TRACE_CONTENT="1")
    oracle._observers = (*oracle._observers, traced.observer(content=True))
    results = [await ask(oracle, "t1", "alice", "whoami", "leaky")]
    results += await oracle.supply_credential("vaulted", "token", ALICE_KEY, user_id="alice")
    results.append(await ask(oracle, "t1", "alice", "leaky!", "peek"))
    await oracle.supply_credential("vaulted", "org", ORG_KEY)
    results.append(await ask(oracle, "t2", "alice", "both"))
    await oracle.close()

    assert [r.status for r in results] == [
        "waiting_for_connection", "completed", "completed", "completed"
    ]  # fmt: skip
    spans = traced.spans
    names = {s.name for s in spans}
    assert {"wait connection", "resume connection", "execute_tool leaky"} <= names
    text = every_value(spans)
    assert "gen_ai.tool.call.result" in {k for s in spans for k in (s.attributes or {})}
    assert "**********" in text  # content is on: the careless tool's masked Secret is there
    for secret in (ALICE_KEY, ORG_KEY):
        assert secret not in text
        assert secret[-10:] not in text
