"""``check_plugin``: one line that passes for a sound plugin and names every problem otherwise."""

from __future__ import annotations

import pytest


def test_a_sound_plugin_passes_in_one_line(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_conformance="""
        import forecast_plugin
        from oracle_core.testing import check_plugin


        def test_forecast_conforms():
            check_plugin(forecast_plugin)


        async def test_also_from_an_async_test():
            check_plugin("forecast_plugin")
        """
    )

    project.runpytest().assert_outcomes(passed=2)


def test_every_tier_and_tool_override_is_checked_through_the_gate(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        tiers="""
        from oracle_core import PluginManifest, hookimpl, tool


        class Tiered:
            def __init__(self, name, visibility, tools):
                self.name, self.visibility, self.tools = name, visibility, tools

            @hookimpl
            def oracle_manifest(self):
                return PluginManifest(
                    name=self.name, summary=f"The {self.name} plugin.",
                    when_to_use=[f"the user mentions {self.name}"], visibility=self.visibility,
                )

            @hookimpl
            def oracle_tools(self):
                return self.tools


        @tool(visibility="always")
        def quick_note(text: str) -> str:
            \"\"\"Jot a note down.\"\"\"
            return text


        @tool
        def search_notes(query: str = "") -> list:
            \"\"\"Search the notes.\"\"\"
            return []


        @tool
        def recall() -> str:
            \"\"\"Recall what the user said before.\"\"\"
            return ""


        @tool
        def audit_log() -> str:
            \"\"\"Internal audit trail.\"\"\"
            return ""


        notes = Tiered("notes", "on-demand", [quick_note, search_notes])
        memory = Tiered("memory", "always", [recall])
        audit = Tiered("audit", "silent", [audit_log])
        """,
        test_tiers="""
        import pytest
        import tiers
        from oracle_core.testing import check_plugin


        @pytest.mark.parametrize("plugin", [tiers.notes, tiers.memory, tiers.audit], ids=str)
        def test_conforms(plugin):
            check_plugin(plugin)
        """,
    )

    project.runpytest().assert_outcomes(passed=3)


BROKEN_PLUGINS = '''
import dataclasses

from oracle_core import Example, Middleware, PluginManifest, hookimpl, tool


def manifest(name, **fields):
    fields.setdefault("when_to_use", [f"the user mentions {name}"])
    return PluginManifest(name=name, summary=fields.pop("summary", f"The {name} plugin."), **fields)


class Plugin:
    """A plugin object: its manifest fields, tools and middleware."""

    def __init__(self, name, tools=(), middleware=(), **fields):
        self.name, self.tools, self.middleware, self.fields = name, list(tools), list(middleware), fields

    @hookimpl
    def oracle_manifest(self):
        return manifest(self.name, **self.fields)

    @hookimpl
    def oracle_tools(self):
        return self.tools

    @hookimpl
    def oracle_middleware(self):
        return self.middleware


@tool
def get_forecast(place: str, days: int = 3) -> str:
    """Get the daily forecast for a place."""
    return place


@tool(name="load_capability")
def shadow(names: list[str]) -> str:
    """Load things, differently."""
    return ""


@tool
def wordy(text: str) -> str:
    """Do something."""
    return text


wordy = dataclasses.replace(wordy, description="Explain everything. " * 60)
either = dataclasses.replace(
    wordy,
    name="either",
    description="Take a place or coordinates.",
    parameters={"anyOf": [{"type": "object", "properties": {"place": {"type": "string"}}},
                          {"type": "object", "properties": {"lat": {"type": "number"}}}]},
)


class Leak(Middleware):
    """Shows its plugin's tool on every model call, loaded or not."""

    async def wrap_model_call(self, request, call_next):
        if get_forecast not in request.tools:
            request = request.replace(tools=(*request.tools, get_forecast))
        return await call_next(request)


bad_examples = Plugin(
    "bad-examples",
    [get_forecast],
    examples=[
        Example(user="Weather?", tool="get_weather", args={"place": "Lisbon"}),
        Example(user="Forecast?", tool="get_forecast", args={"place": "Lisbon", "days": "soon"}),
    ],
)
meta_name = Plugin("meta-name", [shadow])
long_description = Plugin("long-description", [wordy])
top_level_any_of = Plugin("top-level-any-of", [either])
wordy_always = Plugin(
    "wordy-always",
    [get_forecast],
    visibility="always",
    summary="Forecasts, current conditions, alerts, pollen, air quality, tides and sunsets.",
    when_to_use=["the user asks about the weather in any form at all, today or later on",
                 "the user plans a trip, an outing, a run, a picnic or anything outdoors"],
    when_not_to_use=["climate statistics, historical records, or long-range seasonal outlooks"],
    examples=[Example(user="Will it rain in Lisbon tomorrow afternoon?", tool="get_forecast",
                      args={"place": "Lisbon", "days": 2})],
)
too_long = Plugin("too-long", [get_forecast], summary="A plugin that says far too much. " * 5)
leaky = Plugin("leaky", [get_forecast], middleware=[Leak()])
'''


def test_a_broken_plugin_fails_with_a_message_naming_each_problem(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        broken=BROKEN_PLUGINS,
        test_broken="""
        import pytest
        import broken
        from oracle_core.testing import check_plugin

        NAMES = ["bad_examples", "meta_name", "long_description", "top_level_any_of",
                 "wordy_always", "too_long", "leaky"]


        @pytest.mark.parametrize("name", NAMES)
        def test_conforms(name):
            check_plugin(getattr(broken, name))
        """,
    )

    result = project.runpytest()

    result.assert_outcomes(failed=7)
    output = result.stdout.str()
    for line in [
        "plugin 'bad-examples' fails 2 conformance check(s):",
        "- manifest field 'examples[0].tool' names 'get_weather', which is not a tool of this "
        "plugin (its tools: get_forecast)",
        "- manifest field 'examples[1].args' does not fit 'get_forecast': invalid arguments for "
        "get_forecast: days: Input should be a valid integer",
        "plugin 'meta-name' fails 1 conformance check(s):",
        "- tool 'load_capability' has the name of a core meta-tool; rename it "
        "(@tool(name='meta_name_load_capability'))",
        "plugin 'long-description' fails 1 conformance check(s):",
        "- tool 'wordy': description is 1200 characters; OpenAI accepts at most 1024: shorten "
        "the docstring",
        "plugin 'top-level-any-of' fails 3 conformance check(s):",
        "- tool 'either': parameters type is None; it must be \"object\"",
        "- tool 'either': parameters has 'anyOf' at the top level, which OpenAI refuses",
        "- tool 'either': parameters has no 'properties' object: list the arguments there",
        "plugin 'wordy-always' fails 1 conformance check(s):",
        "- Tier-1 entry costs 111 tokens, over the budget of 80: shorten the manifest fields it "
        "shows",
        "plugin 'too-long' fails 1 conformance check(s):",
        "- manifest field 'summary' is 164 characters; keep it within 120",
        # The run loop refuses the call even though the middleware showed the tool.
        "plugin 'leaky' fails 1 conformance check(s):",
        "- tool 'get_forecast' was shown before 'leaky' was loaded: on-demand tools must stay "
        "hidden until load_capability",
    ]:
        assert line in output


def test_an_invalid_manifest_lists_every_bad_field(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_manifest="""
        from oracle_core import hookimpl
        from oracle_core.testing import check_plugin


        class Sloppy:
            @hookimpl
            def oracle_manifest(self):
                return {"name": "Sloppy Plugin", "summary": " ", "tags": ["Weather"]}


        def test_conforms():
            check_plugin(Sloppy())
        """
    )

    result = project.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E * plugin 'Sloppy Plugin' fails 4 conformance check(s):",
            "E *   - manifest field 'name' 'Sloppy Plugin' is not a valid plugin name: *",
            "E *   - manifest field 'summary' summary is empty: *",
            "E *   - manifest field 'when_to_use' is empty for *",
            "E *   - manifest field 'tags' tags must be non-empty and lowercase: *",
        ]
    )


def test_budget_config_env_and_dependencies_can_be_given(project: pytest.Pytester) -> None:
    project.makepyfile(
        configured="""
        from oracle_core import PluginManifest, hookimpl, tool


        @tool
        def ping() -> str:
            \"\"\"Answer pong.\"\"\"
            return "pong"


        @hookimpl
        def oracle_manifest():
            return PluginManifest(name="configured", summary="Needs settings.",
                                  when_to_use=["never"], depends_on=["forecast"])


        @hookimpl
        def oracle_tools(config):
            if "endpoint" not in config or config.get("token") != "secret":
                raise ValueError("set endpoint under [plugins.configured] and the token")
            return [ping]
        """,
        test_configured="""
        import configured
        import forecast_plugin
        from oracle_core.testing import check_plugin


        def test_with_everything_it_needs():
            check_plugin(
                configured,
                config={"endpoint": "http://127.0.0.1:9"},
                env={"ORACLE_PLUGIN_CONFIGURED__TOKEN": "secret"},
                dependencies=[forecast_plugin],
            )


        def test_without_settings():
            check_plugin(configured, dependencies=[forecast_plugin])


        def test_without_its_dependency():
            check_plugin(
                configured,
                config={"endpoint": "http://127.0.0.1:9"},
                env={"ORACLE_PLUGIN_CONFIGURED__TOKEN": "secret"},
            )
        """,
    )

    result = project.runpytest()

    result.assert_outcomes(passed=1, failed=2)
    output = result.stdout.str()
    assert (
        "plugin 'configured' fails 1 conformance check(s):\n"
        "E         - hook oracle_tools raised ValueError: set endpoint under "
        "[plugins.configured] and the token"
    ) in output
    assert (
        "plugin 'configured' fails 1 conformance check(s):\n"
        "E         - depends_on names 'forecast' (not installed): install or fix it, "
        "or remove it from depends_on"
    ) in output
