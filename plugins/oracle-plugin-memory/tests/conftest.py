"""Fixtures for the memory plugin's tests: oracles on a temporary ORACLE_HOME."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import oracle_plugin_memory
import pytest

from oracle_core import Oracle, Settings, ToolContext
from oracle_core.testing.openai_server import FakeOpenAI

OracleMaker = Callable[..., Oracle]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    """A scripted OpenAI-compatible model server on 127.0.0.1."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def make_oracle(tmp_path: Path, fake: FakeOpenAI) -> AsyncIterator[OracleMaker]:
    """Builds oracles with the memory plugin on ``tmp_path``; closes them after the test."""
    made: list[Oracle] = []

    def make(*plugins: Any) -> Oracle:
        oracle = Oracle(
            [oracle_plugin_memory, *plugins],
            entry_points=False,
            settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)}),
            model=fake.model(num_retries=0),
        )
        made.append(oracle)
        return oracle

    yield make
    for oracle in made:
        await oracle.close()


@pytest.fixture
async def oracle(make_oracle: OracleMaker) -> Oracle:
    """An oracle with the memory plugin, started (as a run or the server would start it)."""
    built = make_oracle()
    await built.start()
    return built


async def _call(
    oracle: Oracle,
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    user: str = "default",
    thread: str = "thread-1",
) -> Any:
    """Call a tool of ``oracle`` the way a run does, as ``user`` on ``thread``.

    The oracle is started first, as a run starts it, so closing it runs the shutdown hooks.
    """
    await oracle.start()
    bound = oracle.registry.tools[name]
    context = ToolContext(
        thread_id=thread,
        plugin=bound.plugin.name,
        config=bound.plugin.config,
        user_id=user,
        oracle=oracle,
    )
    return await bound.tool.call(arguments or {}, context)


ToolCaller = Callable[..., Any]


@pytest.fixture
def call() -> ToolCaller:
    """``await call(oracle, "save_memory", {...}, user="alice")``: a tool call as a run makes it."""
    return _call
