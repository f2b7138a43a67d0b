"""Bulkheads: each plugin's sync tools hold at most its share of the sync-tool pool.

Hung tools wait on a ``threading.Event`` the test sets at the end; a timeout that must pass
is one a tool declares (``@tool(timeout=...)``), never a sleep of the test.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from support import ToolsPlugin, wait_until

from oracle_core import (
    MemoryCheckpointer,
    Model,
    ModelRequest,
    ModelResponse,
    Oracle,
    RunLimits,
    Settings,
    tool,
)
from oracle_core.errors import ConfigError
from oracle_core.models.base import assistant_message, tool_call
from oracle_core.run.pool import PoolExhaustedError, SyncToolPool
from oracle_core.settings.sync_tools import SyncToolShares


class Hangs:
    """Sync functions that hang until :meth:`release`, counting who got in."""

    def __init__(self, expected: int) -> None:
        self.release = threading.Event()
        self.all_in = threading.Event()
        self.entered = 0
        self._expected = expected
        self._lock = threading.Lock()

    def __call__(self) -> str:
        with self._lock:
            self.entered += 1
            if self.entered == self._expected:
                self.all_in.set()
        self.release.wait(30)
        return "late"

    async def until_all_in(self) -> None:
        assert await asyncio.to_thread(self.all_in.wait, 10), "the hung calls never started"


class CallsByThread(Model):
    """On a run's first step, calls the tools its thread is mapped to; then answers."""

    name = "calls-by-thread"

    def __init__(self, calls: dict[str, list[str]]) -> None:
        self.calls = calls

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.step == 1:
            names = self.calls[request.thread_id]
            made = [tool_call(n, "{}", f"call_{i}") for i, n in enumerate(names)]
            return ModelResponse(assistant_message(None, made))
        return ModelResponse(assistant_message("done", None))


def results(run: Any) -> list[str]:
    return [e.content for e in run.events if e.type == "tool_result"]


def stuck_and_lively(hangs: Hangs, timeout: float) -> tuple[ToolsPlugin, ToolsPlugin]:
    """Plugin ``stuck``, whose sync tool ``hang`` hangs, and ``lively``, whose ``quick`` answers."""

    @tool(timeout=timeout)
    def hang() -> str:
        """Hang until released."""
        return hangs()

    @tool
    def quick() -> str:
        """Answer at once."""
        return "quick"

    return ToolsPlugin(hang, name="stuck"), ToolsPlugin(quick, name="lively")


def build(tmp_path: Path, model: Model, *plugins: Any, workers: int, **env: str) -> Oracle:
    return Oracle(
        list(plugins),
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(tmp_path), **env}),
        model=model,
        checkpointer=MemoryCheckpointer(),
        limits=RunLimits(sync_tool_workers=workers, tool_concurrency=4),
    )


async def test_one_plugin_hanging_all_its_sync_tools_leaves_the_others_answering(
    tmp_path: Path,
) -> None:
    hangs = Hangs(expected=2)  # the share of a 4-worker pool: half
    model = CallsByThread({"stuck": ["hang"] * 4, "lively": ["quick"] * 4})
    oracle = build(tmp_path, model, *stuck_and_lively(hangs, timeout=30), workers=4)
    try:
        stuck = asyncio.create_task(oracle.run("stuck", "go"))
        await hangs.until_all_in()

        lively = await oracle.run("lively", "go")

        assert results(lively) == ["quick"] * 4  # on the two workers stuck cannot take
        assert hangs.entered == 2  # stuck's other calls wait for its share, not the pool
    finally:
        hangs.release.set()
    assert results(await stuck) == ["late"] * 4  # the waiting calls ran once it freed up
    await oracle.close()


async def test_a_plugin_whose_share_is_held_by_timed_out_calls_fails_at_once_naming_it_and_the_setting(
    tmp_path: Path,
) -> None:
    hangs = Hangs(expected=2)
    model = CallsByThread(
        {"first": ["hang", "hang"], "again": ["hang"], "other": ["quick", "quick", "quick"]}
    )
    oracle = build(tmp_path, model, *stuck_and_lively(hangs, timeout=0.2), workers=4)
    try:
        first = await oracle.run("first", "go")
        assert results(first) == [json.dumps({"error": "hang timed out after 0.2 s"})] * 2
        await hangs.until_all_in()

        again = await oracle.run("again", "go")
        other = await oracle.run("other", "go")

        [refusal] = results(again)
        assert "plugin 'stuck' has all 2 of its sync-tool workers held" in refusal
        assert "ORACLE_SYNC_TOOL_SHARE" in refusal and "[sync_tools.plugins]" in refusal
        assert hangs.entered == 2  # the refused call never started
        assert results(other) == ["quick"] * 3
    finally:
        hangs.release.set()
    deps = await oracle.run_deps()
    wait_until(lambda: deps.executor.pool.abandoned == 0, "the hung calls returned", wait=10)
    await oracle.close()


async def test_a_call_over_its_share_waits_for_the_plugins_own_calls_to_end() -> None:
    pool = SyncToolPool(2, SyncToolShares(default=1))
    hangs = Hangs(expected=1)
    try:
        held = asyncio.create_task(pool.run(hangs, 30, threading.Event(), "stuck"))
        await hangs.until_all_in()
        waiting = asyncio.create_task(pool.run(lambda: "ran", 30, threading.Event(), "stuck"))

        other = await pool.run(lambda: "other", 30, threading.Event(), "lively")
        assert other == "other" and not waiting.done()

        hangs.release.set()
        assert (await held, await waiting) == ("late", "ran")
    finally:
        hangs.release.set()
        pool.close()


async def test_a_call_whose_share_stays_busy_for_its_whole_timeout_fails_naming_the_plugin() -> (
    None
):
    pool = SyncToolPool(2, SyncToolShares(default=1))
    hangs = Hangs(expected=1)
    ran = threading.Event()
    try:
        held = asyncio.create_task(pool.run(hangs, 30, threading.Event(), "stuck"))
        await hangs.until_all_in()

        with pytest.raises(PoolExhaustedError) as caught:
            await pool.run(ran.set, 0.05, threading.Event(), "stuck")

        assert str(caught.value).startswith(
            "plugin 'stuck' had all 1 of its sync-tool workers busy for the whole 0.05 s"
        )
        assert "ORACLE_SYNC_TOOL_SHARE" in str(caught.value)
        assert not ran.is_set()
    finally:
        hangs.release.set()
    assert await held == "late"
    pool.close()


async def test_calls_waiting_for_a_share_fail_at_once_when_it_fills_with_abandoned_calls() -> None:
    pool = SyncToolPool(2, SyncToolShares(default=1))
    hangs = Hangs(expected=1)
    ran = threading.Event()
    try:
        timed_out = asyncio.create_task(pool.run(hangs, 0.2, threading.Event(), "stuck"))
        await hangs.until_all_in()
        waiting = asyncio.create_task(pool.run(ran.set, 30, threading.Event(), "stuck"))

        with pytest.raises(TimeoutError):
            await timed_out
        # Its share can free up only when the hung call returns: no use waiting 30 s.
        with pytest.raises(PoolExhaustedError, match="plugin 'stuck' has all 1 of its"):
            await asyncio.wait_for(waiting, 10)
        assert not ran.is_set()
    finally:
        hangs.release.set()
    wait_until(lambda: pool.abandoned == 0, "the hung call returned", wait=10)
    assert await pool.run(lambda: "free", 30, threading.Event(), "stuck") == "free"
    pool.close()


async def test_a_call_that_gives_up_its_turn_passes_it_on_to_the_next() -> None:
    pool = SyncToolPool(1, SyncToolShares(default=1))
    hangs = Hangs(expected=1)
    try:
        held = asyncio.create_task(pool.run(hangs, 30, threading.Event(), "other"))
        await hangs.until_all_in()  # the pool's only worker
        queued = asyncio.create_task(pool.run(lambda: "q", 30, threading.Event(), "stuck"))
        quitter = asyncio.create_task(pool.run(lambda: "x", 30, threading.Event(), "stuck"))
        patient = asyncio.create_task(pool.run(lambda: "ran", 30, threading.Event(), "stuck"))
        await asyncio.sleep(0)  # one turn of the loop: each of them is in place now
        # Dropping the queued call hands its turn to the quitter, which gives it up too.
        queued.cancel()
        quitter.cancel()

        hangs.release.set()

        assert (await held, await asyncio.wait_for(patient, 10)) == ("late", "ran")
        assert queued.cancelled() and quitter.cancelled()
    finally:
        hangs.release.set()
        pool.close()


def test_each_plugins_share_is_half_the_pool_unless_the_operator_sets_it(tmp_path: Path) -> None:
    assert [SyncToolPool(n).share("any") for n in (1, 2, 3, 8)] == [1, 1, 1, 4]

    (tmp_path / "oracle.toml").write_text(
        "[sync_tools]\nshare = 2\n\n[sync_tools.plugins]\nreports = 1\nbig = 99\n"
    )
    from_file = Settings.from_env({"ORACLE_HOME": str(tmp_path)}).sync_tool_shares()
    from_env = Settings.from_env(
        {"ORACLE_HOME": str(tmp_path), "ORACLE_SYNC_TOOL_SHARE": "3"}
    ).sync_tool_shares()

    pool = SyncToolPool(8, from_file)
    assert (pool.share("any"), pool.share("reports"), pool.share("big")) == (2, 1, 8)
    pool = SyncToolPool(8, from_env)  # the variable wins over the file's share
    assert (pool.share("any"), pool.share("reports")) == (3, 1)


async def test_the_oracles_pool_takes_the_shares_from_the_settings(tmp_path: Path) -> None:
    oracle = build(tmp_path, CallsByThread({}), workers=6, ORACLE_SYNC_TOOL_SHARE="5")
    deps = await oracle.run_deps()
    assert (deps.executor.pool.workers, deps.executor.pool.share("any")) == (6, 5)
    await oracle.close()


@pytest.mark.parametrize(
    ("toml", "env", "message"),
    [
        ("", "0", "ORACLE_SYNC_TOOL_SHARE='0' in the environment is not valid: expected a whole number of threads, at least 1"),
        ("[sync_tools]\nshare = \"many\"\n", "", "line 2: sync_tools.share is a string; expected a whole number of threads, at least 1"),
        ("[sync_tools.plugins]\nreports = 0\n", "", "line 2: sync_tools.plugins.reports is an integer; expected a whole number of threads, at least 1"),
        ("[sync_tools]\nplugins = 1\n", "", "line 2: sync_tools.plugins is an integer; expected a table ([sync_tools.plugins])"),
        ("sync_tools = 1\n", "", "line 1: sync_tools is an integer; expected a table ([sync_tools])"),
    ],
)  # fmt: skip
def test_a_bad_share_names_the_variable_or_the_line_and_what_it_takes(
    tmp_path: Path, toml: str, env: str, message: str
) -> None:
    (tmp_path / "oracle.toml").write_text(toml)
    with pytest.raises(ConfigError, match=re.escape(message)):
        Settings.from_env(
            {"ORACLE_HOME": str(tmp_path), "ORACLE_SYNC_TOOL_SHARE": env}
        ).sync_tool_shares()
