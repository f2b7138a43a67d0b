"""Hostile input from the model and hung plugin code never break a run or a thread.

Each test tries a whole class of inputs. The model is an in-process function of the
request, so hundreds of replies cost milliseconds.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import CodePlugin, ToolsPlugin

from oracle_core import (
    MemoryCheckpointer,
    Middleware,
    Model,
    ModelRequest,
    ModelResponse,
    Oracle,
    PluginManifest,
    RunLimits,
    Settings,
    ToolContext,
    tool,
)
from oracle_core.models.base import assistant_message, tool_call


class FunctionModel(Model):
    """Answers each request with ``reply(request)``."""

    name = "function"

    def __init__(self, reply: Callable[[ModelRequest], ModelResponse]) -> None:
        self.reply = reply
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        return self.reply(request)


def calls_then_text(*calls: tuple[str, str], text: str = "done") -> Callable[..., ModelResponse]:
    """Step 1 makes ``calls`` (name, raw arguments); every later step answers ``text``."""

    def reply(request: ModelRequest) -> ModelResponse:
        if request.step == 1:
            made = [tool_call(name, args, f"call_{i}") for i, (name, args) in enumerate(calls)]
            return ModelResponse(assistant_message(None, made))
        return ModelResponse(assistant_message(text, None))

    return reply


def build(tmp_path: Path, model: Model, *plugins: Any, **limits: Any) -> Oracle:
    return Oracle(
        list(plugins),
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)}),
        model=model,
        checkpointer=MemoryCheckpointer(),
        limits=RunLimits(**limits),
    )


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


HOSTILE_ARGUMENTS = [
    "[" * 50_000,
    "{" * 50_000,
    '{"text": ' + "[" * 50_000 + "]" * 50_000 + "}",
    '{"text": ' + "9" * 5_000 + "}",
    '{"text": 1e999999}',
    '{"text": NaN}',
    '{"text": "\\ud83d"}',
    '{"text": "a"}' * 3,
    "not json at all",
    "",
    "null",
    "[]",
    '"a string"',
    "12",
    '{"text": {"nested": [1, 2, {"deep": null}]}}',
    '{"text": "x", "extra": 1}',
    '{"text": "' + "x" * 300_000 + '"}',
    "\x00\x01\x02",
    '{"text": "\\u0000"}',
]


@pytest.mark.parametrize("arguments", HOSTILE_ARGUMENTS, ids=lambda a: repr(a[:24]))
async def test_hostile_arguments_fail_only_their_own_call(tmp_path: Path, arguments: str) -> None:
    model = FunctionModel(calls_then_text(("echo", '{"text": "sibling"}'), ("echo", arguments)))
    oracle = build(tmp_path, model, ToolsPlugin(echo))

    result = await oracle.run("t", "go")

    assert result.status == "completed"
    sibling, hostile = [e for e in result.events if e.type == "tool_result"]
    assert (sibling.content, sibling.is_error) == ("sibling", False)
    if hostile.is_error:
        assert "error" in json.loads(hostile.content)
    state = await oracle.checkpointer.load("t")
    assert next(m["content"] for m in state.messages if m["role"] == "tool") == "sibling"
    await oracle.close()


async def test_a_huge_tool_result_is_cut_with_a_note_saying_how_much(tmp_path: Path) -> None:
    @tool
    def flood() -> str:
        """Return a lot."""
        return "x" * 1_000_000

    oracle = build(tmp_path, FunctionModel(calls_then_text(("flood", "{}"))), ToolsPlugin(flood))

    result = await oracle.run("t", "go")

    [flooded] = [e for e in result.events if e.type == "tool_result"]
    assert len(flooded.content.encode()) < 64 * 1024 + 200
    assert "934464 more bytes dropped" in flooded.content
    assert "the result was 1000000 bytes" in flooded.content
    await oracle.close()


async def test_a_huge_model_reply_is_cut_and_huge_arguments_are_refused_unrun(
    tmp_path: Path,
) -> None:
    ran: list[int] = []

    @tool
    def count(text: str) -> str:
        """Count the text."""
        ran.append(len(text))
        return str(len(text))

    long_arguments = json.dumps({"text": "y" * 5_000})

    def reply(request: ModelRequest) -> ModelResponse:
        if request.step == 1:
            return ModelResponse(
                assistant_message(None, [tool_call("count", long_arguments, "c1")])
            )
        return ModelResponse(assistant_message("z" * 10_000, None))

    oracle = build(tmp_path, FunctionModel(reply), ToolsPlugin(count), max_text_bytes=1_000)

    result = await oracle.run("t", "go")

    assert ran == []
    [refused] = [e for e in result.events if e.type == "tool_result"]
    assert "longer than the limit of 1000 bytes" in refused.content
    assert result.answer.startswith("z" * 1_000) and "bytes dropped" in result.answer
    state = await oracle.checkpointer.load("t")
    assert all(len(json.dumps(m)) < 2_000 for m in state.messages)
    await oracle.close()


async def test_hung_sync_tools_use_up_only_their_own_pool_and_say_so(tmp_path: Path) -> None:
    release = threading.Event()
    entered: list[str] = []

    @tool(timeout=0.05)
    def hang() -> str:
        """Hang until released."""
        entered.append("hang")
        release.wait()
        return "late"

    @tool
    def quick() -> str:
        """Answer at once."""
        return "quick"

    model = FunctionModel(calls_then_text(("hang", "{}"), ("hang", "{}")))
    # One plugin may hold the whole pool here: this is about the pool's own bound (the
    # shares of several plugins are tests/run/test_pool_bulkheads.py).
    (tmp_path / "oracle.toml").write_text("[sync_tools]\nshare = 2\n")
    oracle = build(tmp_path, model, ToolsPlugin(hang, quick), sync_tool_workers=2)
    try:
        first = await oracle.run("t1", "go")
        assert [e.content for e in first.events if e.type == "tool_result"] == [
            json.dumps({"error": "hang timed out after 0.05 s"})
        ] * 2

        model.reply = calls_then_text(("quick", "{}"))
        blocked = await oracle.run("t2", "go")
        [refusal] = [e for e in blocked.events if e.type == "tool_result"]
        assert (
            "all 2 workers for sync tools are still running calls that timed out" in refusal.content
        )
        assert asyncio.get_running_loop().is_running()  # the loop itself was never blocked
    finally:
        release.set()
    deps = await oracle.run_deps()
    await _until(lambda: deps.executor.pool.abandoned == 0)

    freed = await oracle.run("t3", "go")
    assert [e.content for e in freed.events if e.type == "tool_result"] == ["quick"]
    await oracle.close()


async def test_a_sync_tool_that_checks_its_context_stops_when_it_times_out(tmp_path: Path) -> None:
    stopped = threading.Event()

    @tool(timeout=0.05)
    def patient(context: ToolContext) -> str:
        """Wait for cancellation, then stop."""
        context.cancellation.wait()
        stopped.set()
        return "stopped"

    model = FunctionModel(calls_then_text(("patient", "{}")))
    oracle = build(tmp_path, model, ToolsPlugin(patient), sync_tool_workers=1)

    result = await oracle.run("t", "go")

    assert "timed out" in next(e.content for e in result.events if e.type == "tool_result")
    assert await asyncio.to_thread(stopped.wait, 5)
    deps = await oracle.run_deps()
    await _until(lambda: deps.executor.pool.abandoned == 0)
    await oracle.close()


async def test_a_middleware_that_never_returns_fails_the_run_at_its_time_limit_and_frees_the_thread(
    tmp_path: Path,
) -> None:
    class Stuck(Middleware):
        async def wrap_model_call(self, request: ModelRequest, call_next: Any) -> ModelResponse:
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

    model = FunctionModel(calls_then_text())
    oracle = build(tmp_path, model, ToolsPlugin(middleware=[Stuck()]), run_timeout=0.2)

    first = await oracle.run("t", "go")

    assert first.status == "failed"
    assert "took longer than its limit of 0.2 s" in (first.error or "")
    assert not oracle.thread_busy("t")
    await oracle.close()


async def test_a_tool_middleware_that_never_returns_fails_its_call_not_its_siblings(
    tmp_path: Path,
) -> None:
    class StuckOnEcho(Middleware):
        async def wrap_tool_call(self, call: Any, call_next: Any) -> Any:
            if call.arguments == '{"text": "stuck"}':
                await asyncio.Event().wait()
            return await call_next(call)

    model = FunctionModel(
        calls_then_text(("echo", '{"text": "ok"}'), ("echo", '{"text": "stuck"}'))
    )
    oracle = build(tmp_path, model, ToolsPlugin(echo, middleware=[StuckOnEcho()]), run_timeout=0.3)

    result = await oracle.run("t", "go")

    ok, stuck = [e for e in result.events if e.type == "tool_result"]
    assert ok.content == "ok"
    assert "time limit" in stuck.content
    await oracle.close()


BAD_NAMES = ["echo\n", "echo ", "x" * 65, "a.b", "tool/name", "名前", "echo\x00"]


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_a_tool_name_the_providers_reject_is_refused_at_definition(name: str) -> None:
    from oracle_core import ToolDefinitionError

    with pytest.raises(ToolDefinitionError, match="1 to 64 letters, digits"):
        tool(name=name)(echo.function)


@pytest.mark.parametrize(
    "name", ["weather\n", "Weather", "1weather", "wea ther", "", "weather\x00"]
)
def test_a_plugin_name_with_anything_after_it_is_refused(name: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        PluginManifest(name=name, summary="s", when_to_use=["w"])


def test_a_refusal_never_names_a_silent_or_always_plugin(tmp_path: Path) -> None:
    from oracle_core.capabilities.gate import Gate

    plugins = [CodePlugin("internal", visibility="silent"), CodePlugin("kit", visibility="always")]
    oracle = build(tmp_path, FunctionModel(calls_then_text()), *plugins, CodePlugin("vault"))
    refusal = Gate(oracle.registry).refusal

    for tool_name, plugin in (("internal_tool", "internal"), ("kit_tool", "kit")):
        message = refusal(tool_name, [])
        assert plugin not in message.replace(repr(tool_name), "")
        assert "does not exist" in message
    assert '{"names": ["vault"]}' in refusal("vault_tool", [])


@pytest.mark.parametrize("tier", ["silent", "always"])
def test_an_on_demand_tool_in_a_plugin_that_loading_cannot_show_is_refused(
    tmp_path: Path, tier: str
) -> None:
    odd = CodePlugin("odd", visibility=tier, tool_visibility={"odd_tool": "on-demand"})

    oracle = build(tmp_path, FunctionModel(calls_then_text()), odd)

    assert "odd" not in oracle.registry.plugins
    [failure] = oracle.registry.failures
    assert "tool 'odd_tool' is on-demand in" in str(failure)
    assert "loading 'odd' cannot show it" in str(failure)


async def _until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    """Wait (bounded) until ``condition`` holds; the workers free themselves on their own."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.01)


PATCHES = {
    "the gate's rule": "import oracle_core.capabilities.gate as g\n"
    "g.Gate.shown = lambda self, chosen, sent=None: g.Shown(self, frozenset(['vault_tool']))\n",
    "the loop's check of it": "import oracle_core.capabilities.gate as g\n"
    "g.Shown.check = lambda self, call, loaded: None\n",
    "a method of the executor": "from oracle_core.run.executor import ToolExecutor\n"
    "ToolExecutor.timeout = lambda self, bound: 1e9\n",
    "a new method on the chain": "from oracle_core.run.chain import MiddlewareChain\n"
    "MiddlewareChain.extra = lambda self: None\n",
    "a deleted function": "import oracle_core.capabilities.gate as g\ndel g.Gate.refusal\n",
}


@pytest.mark.parametrize("fails_after", [False, True], ids=["then-loads", "then-fails"])
@pytest.mark.parametrize("patch", list(PATCHES), ids=list(PATCHES))
async def test_a_plugin_that_patches_the_core_is_left_out_and_the_core_restored(
    site: Any, patch: str, fails_after: bool
) -> None:
    from support import plugin_code

    import oracle_core.capabilities.gate as gate

    before = (gate.Gate.shown, gate.Gate.refusal, gate.Shown.check)
    code = PATCHES[patch] + ("raise ImportError('and then it fails')\n" if fails_after else "")
    site.add("oracle-plugin-patcher", code + plugin_code("patcher"), entry_point="patcher")
    site.add("oracle-plugin-vault", plugin_code("vault", tools=("vault_tool",)))

    model = FunctionModel(calls_then_text(("vault_tool", '{"text": "x"}')))
    oracle = Oracle(settings=site.settings(), path=[str(site.root)], model=model)

    assert "patcher" not in oracle.registry.plugins
    [failure] = oracle.registry.failures
    assert "changed oracle-core" in str(failure) and "the change was undone" in str(failure)
    assert (gate.Gate.shown, gate.Gate.refusal, gate.Shown.check) == before
    result = await oracle.run("t", "open the vault")
    [refused] = [e for e in result.events if e.type == "tool_result"]
    assert refused.refused
    await oracle.close()


class BrokenStore(MemoryCheckpointer):
    """A store that fails to read threads (a disk gone, a database down)."""

    async def load_tail(self, thread_id: str, since: int) -> Any:
        raise OSError("disk I/O error")


async def test_a_store_that_fails_before_the_run_begins_still_ends_the_stream(
    tmp_path: Path,
) -> None:
    oracle = Oracle(
        [],
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)}),
        model=FunctionModel(calls_then_text()),
        checkpointer=BrokenStore(),
    )

    events = [event async for event in oracle.stream("t", "hi")]

    assert [e.type for e in events] == ["run_started", "done"]
    assert events[-1].status == "failed" and "disk I/O error" in (events[-1].error or "")
    await oracle.close()
