"""The run loop through litellm: tools, concurrency, bad model output, errors, streaming."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any

import pytest
from conftest import MakeOracle
from support import CodePlugin, ToolsPlugin

from oracle_core import (
    Middleware,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolResult,
    tool,
)
from oracle_core.testing.openai_server import FakeOpenAI, Reply
from oracle_core.values.events import RunFinished, TextDelta, ToolCallEvent


def tool_contents(server: FakeOpenAI, request: int) -> list[str]:
    return server.requests[request].tool_results


async def test_parallel_calls_run_concurrently_within_the_bound_and_answer_in_call_order(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    active = {"now": 0, "max": 0}
    two_running = asyncio.Event()

    @tool
    async def work(n: int) -> int:
        """Do some work."""
        active["now"] += 1
        active["max"] = max(active["max"], active["now"])
        if active["now"] == 2:
            two_running.set()
        await two_running.wait()
        for _ in range(10):  # give calls beyond the bound every chance to start
            await asyncio.sleep(0)
        active["now"] -= 1
        return n * 10

    oracle = make_oracle(ToolsPlugin(work), tool_concurrency=2)
    fake_openai.script(Reply.calls(*[("work", {"n": n}) for n in range(6)]), Reply.text("done"))

    result = await oracle.run("t", "go")

    assert result.status == "completed"
    assert active["max"] == 2
    assert tool_contents(fake_openai, 1) == ["0", "10", "20", "30", "40", "50"]


async def test_sync_tools_run_in_threads_and_never_block_the_event_loop(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    signal = threading.Event()

    @tool
    def wait_for_signal() -> str:
        """Block until signalled."""
        return "signalled" if signal.wait(timeout=10) else "never signalled"

    @tool
    async def send_signal() -> str:
        """Signal."""
        signal.set()
        return "sent"

    oracle = make_oracle(ToolsPlugin(wait_for_signal, send_signal))
    fake_openai.script(Reply.calls(("wait_for_signal", {}), ("send_signal", {})), Reply.text("ok"))

    await oracle.run("t", "go")

    assert tool_contents(fake_openai, 1) == ["signalled", "sent"]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot do {reason}")


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (("add", "{not json"), "the arguments of add are not valid JSON"),
        (("add", "[1, 2]"), "the arguments of add must be a JSON object, not list"),
        (
            ("add", {"a": 1, "b": "two"}),
            "invalid arguments for add: b: Input should be a valid integer",
        ),
        (("add", {"a": 1}), "invalid arguments for add: b: Field required"),
        (("explode", {"reason": "that"}), "explode failed: ValueError: cannot do that"),
    ],
)
async def test_bad_model_output_becomes_an_error_the_model_can_read(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, call: tuple[str, Any], expected: str
) -> None:
    oracle = make_oracle(ToolsPlugin(add, explode))
    fake_openai.script(Reply.calls(call), Reply.text("sorry"))

    result = await oracle.run("t", "go")

    assert result.status == "completed"
    [content] = tool_contents(fake_openai, 1)
    assert expected in json.loads(content)["error"]
    assert "Traceback" not in content


async def test_a_tool_that_raises_logs_its_traceback(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    oracle = make_oracle(ToolsPlugin(explode))
    fake_openai.script(Reply.call("explode", {"reason": "x"}), Reply.text("sorry"))

    with caplog.at_level(logging.ERROR, logger="oracle_core.run.loop"):
        await oracle.run("t", "go")

    assert "tool explode of plugin kit raised" in caplog.text
    assert "ValueError: cannot do x" in caplog.text


async def test_a_tool_that_takes_too_long_times_out(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    never = asyncio.Event()

    @tool(timeout=0.05)
    async def hang() -> str:
        """Never returns."""
        await never.wait()
        return "impossible"

    oracle = make_oracle(ToolsPlugin(hang))
    fake_openai.script(Reply.call("hang"), Reply.text("gave up"))

    await oracle.run("t", "go")

    assert json.loads(tool_contents(fake_openai, 1)[0]) == {"error": "hang timed out after 0.05 s"}


async def test_retryable_model_errors_are_retried(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(model=fake_openai.model(num_retries=2))
    fake_openai.script(Reply.error(503, "overloaded"), Reply.text("fine now"))

    result = await oracle.run("t", "hi")

    assert (result.status, result.answer) == ("completed", "fine now")
    assert len(fake_openai.requests) == 2


async def test_a_model_error_fails_the_run_cleanly_and_the_thread_stays_usable(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(model=fake_openai.model(num_retries=0))
    fake_openai.script(Reply.error(400, "prompt is too long"), Reply.text("second try works"))

    failed = await oracle.run("t", "hi")
    retried = await oracle.run("t", "hi again")

    assert failed.status == "failed"
    assert failed.error is not None
    assert "(HTTP 400)" in failed.error
    assert "prompt is too long" in failed.error
    assert retried.answer == "second try works"
    state = await oracle.checkpointer.load("t")
    assert [m["role"] for m in state.messages] == ["user", "assistant", "user", "assistant"]
    assert state.messages[1]["content"] == ""  # the failed turn's marker: kept, never sent
    assert [r.status for r in state.runs] == ["failed", "completed"]
    sent = [m["content"] for m in fake_openai.requests[1].messages if m["role"] != "system"]
    assert sent == ["hi again"]


async def test_a_model_timeout_fails_the_run_with_a_clear_error(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    release = threading.Event()
    oracle = make_oracle(model=fake_openai.model(num_retries=0, timeout=0.5))
    fake_openai.script(Reply(content="too late", hold=release))

    result = await oracle.run("t", "hi")
    release.set()

    assert result.status == "failed"
    assert f"the model server at {fake_openai.url} did not answer within 0.5 s" in (
        result.error or ""
    )


async def test_the_step_limit_ends_the_run_with_a_clear_message_and_state_saved(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(max_steps=2)
    fake_openai.script(Reply.call("list_capabilities"), Reply.call("list_capabilities"))

    result = await oracle.run("t", "loop forever")

    assert result.status == "failed"
    assert "stopped after 2 model calls without a final answer" in (result.error or "")
    state = await oracle.checkpointer.load("t")
    assert [m["role"] for m in state.messages] == ["user", "assistant", "tool", "assistant", "tool"]


async def test_streaming_yields_text_deltas_and_assembles_streamed_tool_calls(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(ToolsPlugin(add))
    fake_openai.script(
        Reply.call("add", {"a": 2, "b": 3}), Reply.text("The sum is five, as computed.")
    )

    events = [e async for e in oracle.stream("t", "2+3?")]

    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1
    assert "".join(deltas) == "The sum is five, as computed."
    assert [(e.name, json.loads(e.arguments)) for e in events if isinstance(e, ToolCallEvent)] == [
        ("add", {"a": 2, "b": 3})
    ]
    assert tool_contents(fake_openai, 1) == ["5"]
    assert all(r.stream for r in fake_openai.requests)
    assert isinstance(events[-1], RunFinished)


class Recorder(Middleware):
    def __init__(self, label: str, log: list[str]) -> None:
        self.label = label
        self.log = log

    async def before_model_call(self, request: ModelRequest) -> None:
        self.log.append(f"{self.label}.before")

    async def wrap_model_call(self, request: ModelRequest, call_next: Any) -> ModelResponse:
        self.log.append(f"{self.label}.wrap>")
        response: ModelResponse = await call_next(request)
        self.log.append(f"{self.label}.wrap<")
        return response

    async def after_model_call(self, request: ModelRequest, response: ModelResponse) -> None:
        self.log.append(f"{self.label}.after")

    async def wrap_tool_call(self, call: ToolCall, call_next: Any) -> ToolResult:
        self.log.append(f"{self.label}.tool:{call.name}")
        result: ToolResult = await call_next(call)
        return result

    async def after_tool_call(self, call: ToolCall, result: ToolResult) -> None:
        outcome = "refused" if result.refused else "ran"
        self.log.append(f"{self.label}.after_tool:{call.name}:{outcome}")


async def test_middleware_runs_in_plugin_order(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    log: list[str] = []
    first = ToolsPlugin(add, middleware=[Recorder("a1", log), Recorder("a2", log)], name="first")
    second = ToolsPlugin(middleware=[Recorder("b", log)], name="second")
    oracle = make_oracle(first, second)
    fake_openai.script(Reply.call("add", {"a": 1, "b": 1}), Reply.text("2"))

    await oracle.run("t", "1+1")

    assert log[:9] == [
        "a1.before", "a2.before", "b.before",
        "a1.wrap>", "a2.wrap>", "b.wrap>", "b.wrap<", "a2.wrap<", "a1.wrap<",
    ]  # fmt: skip
    assert log[9:12] == ["b.after", "a2.after", "a1.after"]
    assert log[12:] == [
        "a1.tool:add", "a2.tool:add", "b.tool:add",
        "b.after_tool:add:ran", "a2.after_tool:add:ran", "a1.after_tool:add:ran",
        "a1.before", "a2.before", "b.before",
        "a1.wrap>", "a2.wrap>", "b.wrap>", "b.wrap<", "a2.wrap<", "a1.wrap<",
        "b.after", "a2.after", "a1.after",
    ]  # fmt: skip


async def test_a_middleware_observes_refused_calls_but_never_wraps_them(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    log: list[str] = []
    oracle = make_oracle(ToolsPlugin(middleware=[Recorder("m", log)]), CodePlugin("hidden"))
    fake_openai.script(Reply.call("hidden_tool", {"text": "x"}), Reply.text("ok"))

    await oracle.run("t", "go")

    assert "m.tool:hidden_tool" not in log
    assert "m.after_tool:hidden_tool:refused" in log


async def test_a_middleware_that_raises_is_reported_with_its_plugin_name(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    class Broken(Middleware):
        async def before_model_call(self, request: ModelRequest) -> None:
            raise KeyError("oops")

    oracle = make_oracle(ToolsPlugin(middleware=[Broken()], name="shaky"))
    fake_openai.script(Reply.text("never"))

    result = await oracle.run("t", "hi")

    assert result.status == "failed"
    assert "middleware Broken of plugin 'shaky' raised in before_model_call: KeyError" in (
        result.error or ""
    )


async def test_a_middleware_can_change_the_request(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    class Polite(Middleware):
        async def wrap_model_call(self, request: ModelRequest, call_next: Any) -> ModelResponse:
            polite = request.system_prompt + "\nAlways be polite."
            response: ModelResponse = await call_next(request.replace(system_prompt=polite))
            return response

    oracle = make_oracle(ToolsPlugin(middleware=[Polite()]))
    fake_openai.script(Reply.text("Certainly."))

    await oracle.run("t", "hi")

    assert fake_openai.requests[0].system_prompt.endswith("\nAlways be polite.")


async def test_tool_calls_left_unanswered_by_a_crash_are_closed_before_the_next_run(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle()
    dangling = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "list_capabilities", "arguments": "{}"},
    }
    await oracle.checkpointer.append(
        "t",
        base=0,
        messages=[
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [dangling]},
        ],
    )
    fake_openai.script(Reply.text("back"))

    result = await oracle.run("t", "are you there?")

    assert result.answer == "back"
    sent = fake_openai.requests[0].messages
    assert sent[3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"error": "not run: the run that asked for it was interrupted"}',
    }
    assert sent[4] == {"role": "user", "content": "are you there?"}


async def test_closing_a_stream_mid_run_saves_the_run_as_cancelled(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    release = threading.Event()
    oracle = make_oracle()
    fake_openai.script(Reply(content="late", hold=release))

    stream = oracle.stream("t", "hi")
    first = await anext(stream)
    await stream.aclose()
    release.set()

    state = await oracle.checkpointer.load("t")
    assert first.type == "run_started"
    assert [r.status for r in state.runs] == ["cancelled"]


async def test_the_discovery_loop_shows_the_model_exactly_what_it_needs_at_each_step(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    weather = CodePlugin("weather", tools=("get_forecast",))
    oracle = make_oracle(weather, CodePlugin("calendar"))
    fake_openai.script(
        Reply.call("list_capabilities"),
        Reply.call("load_capability", {"names": ["weather"]}),
        Reply.call("get_forecast", {"text": "Oslo"}),
        Reply.text("Snow in Oslo."),
    )

    result = await oracle.run("t", "Weather in Oslo?")

    shown = [r.tool_names for r in fake_openai.requests]
    assert shown == [
        ["list_capabilities", "load_capability", "search_capabilities"],
        ["list_capabilities", "load_capability", "search_capabilities"],
        ["list_capabilities", "load_capability", "search_capabilities", "get_forecast"],
        ["list_capabilities", "load_capability", "search_capabilities", "get_forecast"],
    ]
    listing = json.loads(tool_contents(fake_openai, 1)[0])
    assert [p["name"] for p in listing] == ["weather", "calendar"]
    assert tool_contents(fake_openai, 3)[-1] == "get_forecast says Oslo"
    assert result.answer == "Snow in Oslo."
    assert result.loaded == ["weather"]
    assert weather.calls == [("get_forecast", {"text": "Oslo"})]


async def test_a_tool_error_reaches_the_model_without_a_logged_traceback(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    from oracle_core import ToolError

    @tool
    def find(place: str) -> str:
        """Find a place."""
        raise ToolError(f"No place called {place!r} was found; check the spelling")

    oracle = make_oracle(ToolsPlugin(find))
    fake_openai.script(Reply.call("find", {"place": "Xyzzy"}), Reply.text("sorry"))

    with caplog.at_level(logging.ERROR, logger="oracle_core.run.loop"):
        await oracle.run("t", "go")

    assert json.loads(tool_contents(fake_openai, 1)[0]) == {
        "error": "No place called 'Xyzzy' was found; check the spelling"
    }
    assert caplog.text == ""


async def test_a_middleware_can_catch_the_model_error_itself_and_fall_back(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    from oracle_core.models.base import ModelError

    class Fallback(Middleware):
        async def wrap_model_call(self, request: ModelRequest, call_next: Any) -> ModelResponse:
            try:
                response: ModelResponse = await call_next(request)
            except ModelError as error:
                return ModelResponse(
                    {"role": "assistant", "content": f"fallback after {type(error).__name__}"}
                )
            return response

    oracle = make_oracle(
        ToolsPlugin(middleware=[Fallback()]), model=fake_openai.model(num_retries=0)
    )
    fake_openai.script(Reply.error(400, "nope"))

    result = await oracle.run("t", "hi")

    assert (result.status, result.answer) == ("completed", "fallback after ModelError")


async def test_only_the_middleware_that_raised_is_blamed(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    class Boom(Middleware):
        async def wrap_model_call(self, request: ModelRequest, call_next: Any) -> ModelResponse:
            raise RuntimeError("inner broke")

    class Passive(Middleware):
        async def wrap_model_call(self, request: ModelRequest, call_next: Any) -> ModelResponse:
            response: ModelResponse = await call_next(request)
            return response

    oracle = make_oracle(
        ToolsPlugin(middleware=[Passive()], name="outer"),
        ToolsPlugin(middleware=[Boom()], name="inner"),
    )
    fake_openai.script(Reply.text("never"))

    result = await oracle.run("t", "hi")

    assert (
        result.error
        == "middleware Boom of plugin 'inner' raised in wrap_model_call: RuntimeError: inner broke"
    )
