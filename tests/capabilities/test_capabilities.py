"""The meta-tools, end to end: the model calls them through litellm and reads their JSON."""

from __future__ import annotations

import json

from conftest import MakeOracle
from support import CodePlugin

from oracle_core.testing.openai_server import FakeOpenAI, Reply


def catalog() -> list[CodePlugin]:
    return [
        CodePlugin("memory", visibility="always", category="memory", tags=["recall"]),
        CodePlugin("weather", category="information", tags=["forecast"]),
        CodePlugin("audit", visibility="silent"),
        CodePlugin("calendar"),
    ]


def tool_result(server: FakeOpenAI, request: int) -> object:
    """The JSON of the last tool result the model read in request number ``request``."""
    return json.loads(server.requests[request].tool_results[-1])


async def test_list_capabilities_lists_non_silent_plugins_in_registration_order(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(*catalog())
    fake_openai.script(Reply.call("list_capabilities"), Reply.text("ok"))

    await oracle.run("t", "what can you do?")

    assert tool_result(fake_openai, 1) == [
        {"name": "memory", "summary": "The memory plugin.", "visibility": "always", "loaded": True, "category": "memory", "tags": ["recall"]},
        {"name": "weather", "summary": "The weather plugin.", "visibility": "on-demand", "loaded": False, "category": "information", "tags": ["forecast"]},
        {"name": "calendar", "summary": "The calendar plugin.", "visibility": "on-demand", "loaded": False, "category": None, "tags": []},
    ]  # fmt: skip


async def test_loaded_flag_turns_true_after_a_load(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(*catalog())
    fake_openai.script(
        Reply.call("load_capability", {"names": ["weather"]}),
        Reply.call("list_capabilities"),
        Reply.text("ok"),
    )

    await oracle.run("t", "weather please")

    listed = {p["name"]: p["loaded"] for p in tool_result(fake_openai, 2)}  # type: ignore[union-attr]
    assert listed == {"memory": True, "weather": True, "calendar": False}


async def test_load_capability_returns_manifest_and_tools_in_request_order(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(*catalog())
    fake_openai.script(
        Reply.call("load_capability", {"names": ["calendar", "weather"]}), Reply.text("ok")
    )

    result = await oracle.run("t", "plan my week")

    entries = tool_result(fake_openai, 1)
    assert [e["name"] for e in entries] == ["calendar", "weather"]  # type: ignore[union-attr]
    weather = entries[1]  # type: ignore[index]
    assert weather["alreadyAvailable"] is False
    assert weather["summary"] == "The weather plugin."
    assert weather["when_to_use"] == ["the user asks about weather"]
    assert weather["tools"] == [
        {"name": "weather_tool", "description": "The weather_tool tool of weather."}
    ]
    assert result.loaded == ["calendar", "weather"]
    state = await oracle.checkpointer.load("t")
    assert state.loaded_plugins == ["calendar", "weather"]


async def test_loading_an_always_or_already_loaded_plugin_is_a_no_op(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(*catalog())
    fake_openai.script(
        Reply.call("load_capability", {"names": ["weather"]}),
        Reply.call("load_capability", {"names": ["weather", "memory"]}),
        Reply.text("ok"),
    )

    await oracle.run("t", "hi")

    again = tool_result(fake_openai, 2)
    assert [(e["name"], e["alreadyAvailable"]) for e in again] == [
        ("weather", True),
        ("memory", True),
    ]  # type: ignore[union-attr]
    assert (await oracle.checkpointer.load("t")).loaded_plugins == ["weather"]


async def test_a_batch_with_any_bad_name_loads_nothing_and_names_every_bad_name(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(*catalog())
    fake_openai.script(
        Reply.call("load_capability", {"names": ["weather", "wether", "audit", "calender"]}),
        Reply.text("ok"),
    )

    await oracle.run("t", "hi")

    error = tool_result(fake_openai, 1)["error"]  # type: ignore[index]
    assert "unknown capability 'wether' (did you mean 'weather'?)" in error
    assert "unknown capability 'calender' (did you mean 'calendar'?)" in error
    assert "'audit' is internal and cannot be loaded" in error
    assert "Nothing was loaded" in error
    assert (await oracle.checkpointer.load("t")).loaded_plugins == []
    assert fake_openai.requests[1].tool_names == [
        "list_capabilities",
        "load_capability",
        "search_capabilities",
        "memory_tool",
        "audit_tool",
    ]


async def test_two_loads_in_one_model_response_both_succeed(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(*catalog())
    fake_openai.script(
        Reply.calls(
            ("load_capability", {"names": ["weather"]}),
            ("load_capability", {"names": ["calendar"]}),
        ),
        Reply.text("ok"),
    )

    await oracle.run("t", "hi")

    assert (await oracle.checkpointer.load("t")).loaded_plugins == ["weather", "calendar"]
    assert "weather_tool" in fake_openai.requests[1].tool_names
    assert "calendar_tool" in fake_openai.requests[1].tool_names


async def test_bad_load_arguments_are_explained(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(*catalog())
    fake_openai.script(Reply.call("load_capability", {"name": "weather"}), Reply.text("ok"))

    await oracle.run("t", "hi")

    assert 'takes {"names": ["name", ...]}' in tool_result(fake_openai, 1)["error"]  # type: ignore[index]
