"""Fixtures for the audit plugin's tests: audited oracles with a dice plugin, an HTTP client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx
import oracle_plugin_audit
import pytest

from oracle_core import Oracle, PluginManifest, Tool, ToolError, hookimpl, tool
from oracle_core.testing import OracleFactory

TOKEN = "s3cret"


@tool
def roll(sides: int = 6) -> int:
    """Roll a die.

    Args:
        sides: how many sides the die has (2 or more).
    """
    if sides < 2:
        raise ToolError(f"a die needs at least 2 sides, not {sides}")
    return 4


class DicePlugin:
    """An on-demand plugin with one tool, hidden until the model loads it."""

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(name="dice", summary="Rolls dice.", when_to_use=["games"])

    @hookimpl
    def oracle_tools(self) -> list[Tool]:
        return [roll]


OracleMaker = Callable[[], Oracle]


@pytest.fixture
def make_oracle(oracle_factory: OracleFactory) -> OracleMaker:
    """Builds oracles with the audit and dice plugins, sharing the test's ``ORACLE_HOME``."""
    return lambda: oracle_factory(oracle_plugin_audit, DicePlugin())


@pytest.fixture
def oracle(make_oracle: OracleMaker) -> Oracle:
    """An oracle with the audit and dice plugins."""
    return make_oracle()


@pytest.fixture
async def client(oracle: Oracle) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of ``oracle`` served by ``oracle serve``'s app, with its token."""
    pytest.importorskip("fastapi")
    from oracle_core.server import create_app

    app = create_app(oracle, tokens=[TOKEN], chat_page=False)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://127.0.0.1",
        headers={"Authorization": f"Bearer {TOKEN}"},
    ) as http:
        yield http
