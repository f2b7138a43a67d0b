"""The capability gate: what the model is shown on each call, and which calls may run."""

from __future__ import annotations

import json

from conftest import MakeOracle
from support import CodePlugin, SitePackages, plugin_code

from oracle_core import Oracle
from oracle_core.store import MemoryCheckpointer
from oracle_core.testing.openai_server import FakeOpenAI, Reply

META = ["list_capabilities", "load_capability", "search_capabilities"]


def tool_messages(server: FakeOpenAI, request: int) -> list[dict[str, object]]:
    """The JSON tool results the model read in request number ``request``."""
    return [json.loads(content) for content in server.requests[request].tool_results]


async def test_always_and_silent_tools_are_shown_every_turn_on_demand_ones_only_once_loaded(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(
        CodePlugin("memory", visibility="always"),
        CodePlugin("weather"),
        CodePlugin("audit", visibility="silent"),
    )
    fake_openai.script(Reply.call("load_capability", {"names": ["weather"]}), Reply.text("ok"))

    await oracle.run("t", "hi")

    assert fake_openai.requests[0].tool_names == [*META, "memory_tool", "audit_tool"]
    assert fake_openai.requests[1].tool_names == [
        *META,
        "memory_tool",
        "audit_tool",
        "weather_tool",
    ]


async def test_loaded_tools_are_appended_in_load_order_so_the_prompt_prefix_stays_stable(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(
        CodePlugin("alpha"), CodePlugin("beta"), CodePlugin("memory", visibility="always")
    )
    fake_openai.script(
        Reply.call("load_capability", {"names": ["beta"]}),
        Reply.call("load_capability", {"names": ["alpha"]}),
        Reply.text("ok"),
    )

    await oracle.run("t", "hi")

    shown = [r.tool_names for r in fake_openai.requests]
    assert shown[1] == [*META, "memory_tool", "beta_tool"]
    assert shown[2] == [*META, "memory_tool", "beta_tool", "alpha_tool"]


async def test_a_load_is_visible_on_the_very_next_model_call(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    weather = CodePlugin("weather")
    oracle = make_oracle(weather)
    fake_openai.script(
        Reply.call("load_capability", {"names": ["weather"]}),
        Reply.call("weather_tool", {"text": "Lisbon"}),
        Reply.text("Sunny"),
    )

    result = await oracle.run("t", "weather in Lisbon?")

    assert result.answer == "Sunny"
    assert "weather_tool" in fake_openai.requests[1].tool_names
    assert weather.calls == [("weather_tool", {"text": "Lisbon"})]
    assert fake_openai.requests[2].messages[-1]["content"] == "weather_tool says Lisbon"


async def test_a_hidden_tool_is_refused_and_its_function_never_entered(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    weather = CodePlugin("weather", tools=("get_forecast", "get_alerts"))
    oracle = make_oracle(weather)
    fake_openai.script(Reply.call("get_forecast", {"text": "x"}), Reply.text("ok"))

    result = await oracle.run("t", "forecast?")

    assert weather.calls == []
    [refusal] = tool_messages(fake_openai, 1)
    assert refusal == {
        "error": "Tool 'get_forecast' is not available yet: call "
        'load_capability({"names": ["weather"]}) first, then call the tool again.'
    }
    assert "get_alerts" not in json.dumps(fake_openai.requests[1].body)
    [event] = [e for e in result.events if e.type == "tool_result"]
    assert event.refused  # type: ignore[attr-defined]


async def test_a_hallucinated_tool_is_refused_without_naming_hidden_tools(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(CodePlugin("weather", tools=("get_forecast",)))
    fake_openai.script(Reply.call("get_weather", {}), Reply.text("ok"))

    await oracle.run("t", "weather?")

    [refusal] = tool_messages(fake_openai, 1)
    assert refusal["error"].startswith("Tool 'get_weather' does not exist.")  # type: ignore[union-attr]
    assert "get_forecast" not in json.dumps(fake_openai.requests[1].body)


async def test_a_tool_loaded_in_the_same_response_is_refused_then_works_next_call(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    weather = CodePlugin("weather")
    oracle = make_oracle(weather)
    fake_openai.script(
        Reply.calls(("load_capability", {"names": ["weather"]}), ("weather_tool", {"text": "now"})),
        Reply.call("weather_tool", {"text": "again"}),
        Reply.text("ok"),
    )

    await oracle.run("t", "hi")

    loaded, refused = tool_messages(fake_openai, 1)
    assert loaded[0]["name"] == "weather"  # type: ignore[index]
    assert refused == {
        "error": "Tool 'weather_tool' was not available when you called it. Its capability "
        "'weather' is loaded now, so call the tool again."
    }
    assert weather.calls == [("weather_tool", {"text": "again"})]


async def test_per_tool_visibility_overrides_the_plugin_tier(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(
        CodePlugin(
            "notes", tools=("quick_note", "search_notes"), tool_visibility={"quick_note": "always"}
        ),
        CodePlugin("memory", visibility="always", tools=("recall",)),
    )
    fake_openai.script(Reply.call("load_capability", {"names": ["notes"]}), Reply.text("ok"))

    await oracle.run("t", "hi")

    # quick_note shows before notes is loaded; search_notes only once it is
    assert fake_openai.requests[0].tool_names == [*META, "quick_note", "recall"]
    assert fake_openai.requests[1].tool_names == [*META, "quick_note", "recall", "search_notes"]


async def test_loads_belong_to_their_thread(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(CodePlugin("weather"))
    fake_openai.script(
        Reply.call("load_capability", {"names": ["weather"]}), Reply.text("ok"), Reply.text("ok")
    )

    await oracle.run("a", "hi")
    await oracle.run("b", "hi")

    assert "weather_tool" not in fake_openai.requests[2].tool_names
    assert (await oracle.checkpointer.load("b")).loaded_plugins == []


async def test_loads_persist_across_runs_of_a_thread(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    oracle = make_oracle(CodePlugin("weather"))
    fake_openai.script(
        Reply.call("load_capability", {"names": ["weather"]}), Reply.text("ok"), Reply.text("ok")
    )

    await oracle.run("a", "hi")
    await oracle.run("a", "and now?")

    assert "weather_tool" in fake_openai.requests[2].tool_names


async def test_prompt_and_tools_are_byte_identical_with_200_on_demand_plugins_installed(
    site: SitePackages, fake_openai: FakeOpenAI
) -> None:
    sent = []
    for extra in (0, 200):
        for index in range(extra):  # the first oracle sees none, the second all 200
            site.add(f"oracle-plugin-extra{index}", plugin_code(f"extra{index}"), version="1.0")
        oracle = Oracle(
            [CodePlugin("memory", visibility="always")],
            settings=site.settings(),
            path=[str(site.root)],
            model=fake_openai.model(),
            checkpointer=MemoryCheckpointer(),
        )
        assert len(oracle.registry) == 1 + extra
        fake_openai.script(Reply.text("ok"))
        await oracle.run("t", "hello")
        body = fake_openai.requests[-1].body
        sent.append((json.dumps(body["messages"]), json.dumps(body["tools"])))

    assert sent[0] == sent[1]
