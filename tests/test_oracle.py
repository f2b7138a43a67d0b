"""The Oracle facade as a script uses it: run, run again, close."""

from __future__ import annotations

import pytest
from conftest import MakeOracle
from support import CodePlugin

from oracle_core import OracleClosedError, hookimpl
from oracle_core.testing.openai_server import FakeOpenAI, Reply


class Counted(CodePlugin):
    """A plugin that counts its lifecycle hooks."""

    def __init__(self) -> None:
        super().__init__("counted", visibility="always")
        self.started = 0
        self.stopped = 0

    @hookimpl
    def oracle_startup(self) -> None:
        self.started += 1

    @hookimpl
    def oracle_shutdown(self) -> None:
        self.stopped += 1


def test_run_sync_may_be_called_again_and_again(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    plugin = Counted()
    oracle = make_oracle(plugin)
    fake_openai.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))

    answers = [oracle.run_sync("t", f"turn {n}").answer for n in (1, 2, 3)]

    assert answers == ["one", "two", "three"]
    assert plugin.started == 1 and plugin.stopped == 0
    assert [m["content"] for m in fake_openai.requests[2].messages if m["role"] == "user"] == [
        "turn 1",
        "turn 2",
        "turn 3",
    ]


def test_close_sync_runs_the_shutdown_hooks_once_and_the_oracle_refuses_more_runs(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    plugin = Counted()
    oracle = make_oracle(plugin)
    fake_openai.script(Reply.text("one"))
    oracle.run_sync("t", "hi")

    oracle.close_sync()
    oracle.close_sync()

    assert plugin.stopped == 1
    with pytest.raises(OracleClosedError, match="build a new Oracle"):
        oracle.run_sync("t", "again")


def test_an_oracle_used_as_a_context_manager_is_closed_at_the_end(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    plugin = Counted()
    fake_openai.script(Reply.text("one"))

    with make_oracle(plugin) as oracle:
        assert oracle.run_sync("t", "hi").status == "completed"
        assert oracle.started

    assert plugin.stopped == 1 and not oracle.started


async def test_the_oracle_counts_as_started_only_after_its_startup_hooks_ran(
    make_oracle: MakeOracle,
) -> None:
    plugin = Counted()
    oracle = make_oracle(plugin)
    assert not oracle.started and plugin.started == 0

    await oracle.start()
    await oracle.start()

    assert oracle.started and plugin.started == 1


class FailsToStart(CodePlugin):
    """A plugin whose startup hook raises."""

    def __init__(self) -> None:
        super().__init__("fragile", visibility="always")

    @hookimpl
    def oracle_startup(self) -> None:
        raise RuntimeError("no database")


async def test_a_plugin_whose_startup_fails_is_left_out_with_its_tools_and_the_rest_runs(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    survivor = Counted()
    oracle = make_oracle(FailsToStart(), survivor)
    fake_openai.script(Reply.text("fine"))

    result = await oracle.run("t", "hi")

    assert result.status == "completed" and survivor.started == 1
    assert "fragile" not in oracle.registry.plugins
    assert any("no database" in str(f) for f in oracle.registry.failures)
    assert "fragile_tool" not in fake_openai.requests[0].tool_names
    assert "counted_tool" in fake_openai.requests[0].tool_names


def test_a_runs_record_says_when_it_last_saved(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    import asyncio
    import time

    asked: list[float] = []

    def answer(request: object) -> Reply:
        asked.append(time.time())  # after the run's first save, before its last
        return Reply.text("ok")

    fake_openai.respond_with(answer)
    oracle = make_oracle()

    result = oracle.run_sync("t", "hi")

    (saved,) = asyncio.run(oracle.checkpointer.load("t")).runs
    assert result.status == "completed"
    assert saved.created_at < asked[0] <= saved.updated_at  # what oracle logs and sweeps read
