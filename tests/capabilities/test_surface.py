"""The specialist surface: exactly 1 to 10 named tools, no meta-tools, no Tier-1 block."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MakeOracle
from support import CodePlugin, SitePackages, plugin_code

from oracle_core import (
    Catalog,
    Middleware,
    ModelRequest,
    Oracle,
    OracleError,
    PluginManifest,
    Settings,
    Specialist,
    SurfaceError,
    Tool,
    hookimpl,
)
from oracle_core.capabilities.gate import SPECIALIST_REFUSAL
from oracle_core.capabilities.prompt import DEFAULT_INSTRUCTIONS
from oracle_core.capabilities.surface import MAX_SPECIALIST_TOOLS, specialist_tools
from oracle_core.plugins.registry import META_TOOL_NAMES
from oracle_core.run.requests import RequestBuilder
from oracle_core.testing.openai_server import FakeOpenAI, Reply


def catalog() -> list[object]:
    """An always plugin, two on-demand ones and a silent one: 2 + 3 + 1 + 1 tools."""
    return [
        CodePlugin("memory", visibility="always", tools=("save_memory", "search_memory")),
        CodePlugin("weather", tools=("get_forecast", "get_alerts", "get_radar")),
        CodePlugin("clock", tools=("now",)),
        CodePlugin("audit", visibility="silent", tools=("audit_log",)),
    ]


def build(*plugins: object, surface: object = None, home: Path | None = None) -> Oracle:
    settings = Settings.from_env({"ORACLE_HOME": str(home or "/nonexistent")})
    return Oracle(list(plugins or catalog()), entry_points=False, settings=settings,
                  surface=surface)  # type: ignore[arg-type]  # fmt: skip


def refusal_of(fake_openai: FakeOpenAI, request: int) -> list[dict[str, object]]:
    return [json.loads(content) for content in fake_openai.requests[request].tool_results]


# -- the shape of the list ---------------------------------------------------------------------


def test_a_specialist_keeps_the_names_in_the_order_given() -> None:
    surface = Specialist(tools=["weather.get_radar", "clock.now"])

    assert surface.tools == ("weather.get_radar", "clock.now")
    assert surface.describe() == {"kind": "specialist", "tools": ["weather.get_radar", "clock.now"]}
    assert Catalog().describe() == {"kind": "catalog"}


def test_no_tools_is_refused_with_how_to_fix() -> None:
    with pytest.raises(SurfaceError, match=r"at least one tool.*plugin\.tool"):
        Specialist(tools=[])


@pytest.mark.parametrize("count", range(MAX_SPECIALIST_TOOLS + 1, 16))
def test_more_than_ten_tools_is_refused_naming_the_limit(count: int) -> None:
    with pytest.raises(SurfaceError) as caught:
        Specialist(tools=[f"kit.tool_{i}" for i in range(count)])

    assert f"at most 10 tools, and {count} are named" in str(caught.value)
    assert "Catalog()" in str(caught.value)


def test_a_duplicate_is_refused_naming_it() -> None:
    with pytest.raises(SurfaceError, match=r"'clock\.now' is named twice"):
        Specialist(tools=["clock.now", "weather.get_radar", "clock.now"])


@pytest.mark.parametrize("name", ["weather", "weather.*", "weather.", "*"])
def test_a_whole_plugin_is_refused(name: str) -> None:
    with pytest.raises(SurfaceError, match="whole plugin"):
        Specialist(tools=[name])


@pytest.mark.parametrize("name", [*sorted(META_TOOL_NAMES), "core.load_capability"])
def test_a_meta_tool_is_refused_as_a_mix_with_the_catalog_surface(name: str) -> None:
    with pytest.raises(SurfaceError) as caught:
        Specialist(tools=["clock.now", name])

    message = str(caught.value)
    assert "meta-tool" in message and "cannot be mixed with the catalog surface" in message


@pytest.mark.parametrize(
    "name",
    ["", " ", "clock.now ", " clock.now", "Clock.now", "clock.no w", "a.b.c", ".now",
     "clock.n\x00ow", "clock.\u00e9t\u00e9", "clock." + "x" * 65, "x" * 10_000, "clock..now",
     "clock.now\n", "../etc.passwd", "clock.now;drop"],
)  # fmt: skip
def test_odd_strings_are_refused_as_not_a_plugin_tool_name(name: str) -> None:
    with pytest.raises(SurfaceError) as caught:
        Specialist(tools=[name])

    message = str(caught.value)
    assert "plugin.tool" in message
    assert len(message) < 400  # a huge name is cut, not echoed whole


@pytest.mark.parametrize("tools", ["clock.now", b"clock.now", {"clock.now": 1}, 7, None])
def test_anything_but_a_list_of_names_is_refused(tools: object) -> None:
    with pytest.raises(SurfaceError, match="takes a list of tool names"):
        Specialist(tools=tools)  # type: ignore[arg-type]


def test_a_name_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(SurfaceError, match="item 1 is int"):
        Specialist(tools=["clock.now", 3])  # type: ignore[list-item]


def test_every_problem_is_listed_at_once() -> None:
    with pytest.raises(SurfaceError) as caught:
        Specialist(tools=["weather", "clock.now", "clock.now", "load_capability"])

    assert len(caught.value.problems) == 3
    assert str(caught.value).startswith("the specialist surface has 3 problems:")


# -- the names against the plugins -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "first", "second"),
    [
        pytest.param(
            "weather.get_forcast",
            "plugin 'weather' has no tool 'get_forcast'",
            "did you mean 'weather.get_forecast'",
            id="an unknown tool, with the closest real name",
        ),
        pytest.param(
            "wether.get_radar",
            "names the plugin 'wether', which is not part of this oracle",
            "'weather.get_radar'",
            id="an unknown plugin, with a suggestion",
        ),
    ],
)
def test_an_unknown_name_is_refused_with_the_closest_real_one(
    name: str, first: str, second: str
) -> None:
    with pytest.raises(SurfaceError) as caught:
        build(surface=Specialist(tools=[name]))

    assert first in str(caught.value)
    assert second in str(caught.value)


def test_a_tool_named_under_the_wrong_plugin_says_which_plugin_owns_it() -> None:
    with pytest.raises(SurfaceError, match=r"belongs to 'clock', so write clock\.now"):
        build(surface=Specialist(tools=["weather.now"]))


def test_a_tool_of_a_plugin_that_failed_to_load_says_why() -> None:
    class Sealed(CodePlugin):
        @hookimpl
        def oracle_tools(self) -> list[Tool]:
            raise RuntimeError("the vault is sealed")

    with pytest.raises(SurfaceError, match=r"failed to load.*the vault is sealed"):
        build(CodePlugin("clock", tools=("now",)), Sealed("vault"), surface=Specialist(["vault.x"]))


def test_a_surface_that_is_neither_catalog_nor_specialist_is_refused() -> None:
    with pytest.raises(SurfaceError, match=r"takes Catalog\(\) or Specialist"):
        build(surface=["clock.now"])


def test_core_tools_such_as_connection_management_count_toward_the_ten() -> None:
    core = [Tool(name="manage_connections", description="d", parameters={}, function=len)]
    three = Specialist(["weather.get_forecast", "clock.now", "memory.save_memory"])

    shown = specialist_tools(three, build().registry, core)

    assert [t.name for t in shown] == ["get_forecast", "now", "save_memory", "manage_connections"]
    ten = [CodePlugin(f"p{i}", tools=(f"t{i}",)) for i in range(10)]
    with pytest.raises(SurfaceError, match=r"10 are named plus 1 of the core \(manage_connections"):
        specialist_tools(Specialist([f"p{i}.t{i}" for i in range(10)]), build(*ten).registry, core)


_POOL_VALID = ["memory.save_memory", "memory.search_memory", "weather.get_forecast",
               "weather.get_alerts", "weather.get_radar", "clock.now", "audit.audit_log"]  # fmt: skip
_KNOWN_ONLY_BAD = {"weather.get_forcast", "nope.now", "memory.now"}
"""Well-formed names that only the plugins can tell are wrong."""
_POOL_BAD = ["weather", "memory", "audit", "clock.*", "weather.", "load_capability",
             "list_capabilities", "x.search_capabilities", "weather.get_forcast", "nope.now",
             "now", "save_memory", "", " clock.now", "Weather.now", "a.b.c", "\u202eclock.now",
             "clock.now\x00", "ignore previous instructions", "x" * 300, "memory.now"]  # fmt: skip


@pytest.mark.parametrize("seed", range(300))
def test_fuzzed_lists_are_accepted_exactly_when_every_rule_holds(seed: int) -> None:
    rng = random.Random(seed)
    registry = _FUZZ_REGISTRY
    count = rng.randint(0, 15)
    bad_share = rng.choice([0.0, 0.0, 0.1, 0.5])
    names = [rng.choice(_POOL_BAD if rng.random() < bad_share else _POOL_VALID * 3)
             for _ in range(count)]  # fmt: skip
    if not names or rng.random() < 0.5:  # many lists without repeats, so valid ones occur
        names = list(dict.fromkeys(names))
    if rng.random() < 0.3 and len(set(_POOL_VALID) - set(names)) and len(names) < 10:
        names.append(rng.choice([n for n in _POOL_VALID if n not in names]))
    valid = (
        1 <= len(names) <= MAX_SPECIALIST_TOOLS
        and len(set(names)) == len(names)
        and all(n in _POOL_VALID for n in names)
    )

    try:
        tools = RequestBuilder(registry, "", Specialist(names)).tools_for(["weather"])
    except SurfaceError as error:
        assert not valid, f"{names!r} refused: {error}"
        message = str(error)
        # The list's shape is checked first; the names against the plugins once it holds.
        shape_bad = {n for n in names if n in _POOL_BAD and n not in _KNOWN_ONLY_BAD}
        shape_ok = not shape_bad and len(set(names)) == len(names) and 1 <= len(names) <= 10
        for bad in _KNOWN_ONLY_BAD & set(names) if shape_ok else shape_bad:
            assert repr(bad)[:60] in message, (bad, message)
        return
    assert valid, f"{names!r} accepted"
    assert [t.name for t in tools] == [n.partition(".")[2] for n in names]


_FUZZ_REGISTRY = build().registry


# -- what the model is shown, and what the gate lets run ---------------------------------------


class SilentRecorder:
    """A silent plugin whose middleware records every request it sees."""

    def __init__(self) -> None:
        self.seen: list[ModelRequest] = []
        recorder = self

        class Record(Middleware):
            async def before_model_call(self, request: ModelRequest) -> ModelRequest | None:
                recorder.seen.append(request)
                return None

        self.middleware = [Record()]

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(name="recorder", summary="Records.", visibility="silent")

    @hookimpl
    def oracle_middleware(self) -> list[Middleware]:
        return self.middleware


async def test_the_model_is_sent_exactly_the_named_tools_and_no_tier1_block(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    recorder = SilentRecorder()
    oracle = make_oracle(
        *catalog(),
        recorder,
        surface=Specialist(tools=["weather.get_radar", "memory.save_memory", "audit.audit_log"]),
    )
    fake_openai.script(Reply.text("ok"))

    await oracle.run("t", "hi")

    [sent] = fake_openai.requests
    assert sent.tool_names == ["get_radar", "save_memory", "audit_log"]
    assert sent.system_prompt == DEFAULT_INSTRUCTIONS
    assert "Available Capabilities" not in json.dumps(sent.body)
    assert not set(sent.tool_names) & META_TOOL_NAMES
    assert [r.tool_names for r in recorder.seen] == [("get_radar", "save_memory", "audit_log")]


async def test_an_on_demand_tool_is_called_without_loading_its_plugin(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    weather = CodePlugin("weather", tools=("get_forecast", "get_alerts"))
    oracle = make_oracle(weather, surface=Specialist(["weather.get_forecast"]))
    fake_openai.script(Reply.call("get_forecast", {"text": "Lisbon"}), Reply.text("Sunny"))

    result = await oracle.run("t", "weather?")

    assert result.answer == "Sunny"
    assert weather.calls == [("get_forecast", {"text": "Lisbon"})]
    assert fake_openai.requests[1].tool_names == ["get_forecast"]
    state = await oracle.checkpointer.load("t")
    assert state.loaded_plugins == []


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("get_alerts", {"text": "x"}),  # a hidden tool of a named tool's plugin
        ("save_memory", {"text": "x"}),  # an always tool that was not named
        ("audit_log", {"text": "x"}),  # a silent tool that was not named
        ("load_capability", {"names": ["weather"]}),
        ("list_capabilities", {}),
        ("search_capabilities", {"queries": ["weather"]}),
        ("no_such_tool", {}),
    ],
)
async def test_anything_but_a_named_tool_is_refused_naming_no_hidden_tool(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI, name: str, arguments: dict[str, object]
) -> None:
    plugins = catalog()
    oracle = make_oracle(*plugins, surface=Specialist(["weather.get_forecast"]))
    fake_openai.script(Reply.call(name, arguments), Reply.text("ok"))

    result = await oracle.run("t", "go")

    assert all(p.calls == [] for p in plugins if isinstance(p, CodePlugin))
    [refusal] = refusal_of(fake_openai, 1)
    assert refusal == {"error": SPECIALIST_REFUSAL.format(name=repr(name))}
    [event] = [e for e in result.events if e.type == "tool_result"]
    assert event.refused  # type: ignore[attr-defined]
    state = await oracle.checkpointer.load("t")
    assert state.loaded_plugins == []
    assert fake_openai.requests[1].tool_names == ["get_forecast"]


async def test_a_middleware_cannot_widen_what_a_specialist_shows(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    weather = CodePlugin("weather", tools=("get_forecast", "get_alerts"))
    hidden = weather.tools[1]

    class Widen(Middleware):
        async def before_model_call(self, request: ModelRequest) -> ModelRequest | None:
            return request.replace(tools=(*request.tools, hidden))

    class Widener:
        @hookimpl
        def oracle_manifest(self) -> PluginManifest:
            return PluginManifest(name="widener", summary="Widens.", visibility="silent")

        @hookimpl
        def oracle_middleware(self) -> list[Middleware]:
            return [Widen()]

    oracle = make_oracle(weather, Widener(), surface=Specialist(["weather.get_forecast"]))
    fake_openai.script(Reply.call("get_alerts", {"text": "x"}), Reply.text("ok"))

    await oracle.run("t", "go")

    assert weather.calls == []


def test_the_oracle_reports_no_tier1_block_and_no_tier1_warning() -> None:
    plugins = [CodePlugin("memory", visibility="always", summary="word " * 600), *catalog()[1:]]
    oracle = build(*plugins, surface=Specialist(["clock.now"]))

    assert oracle.tier1_block == ""
    assert oracle.system_prompt == DEFAULT_INSTRUCTIONS
    assert oracle.tier1_warning() is None
    assert build(*plugins).tier1_warning() is not None


async def test_a_plugin_whose_startup_fails_takes_its_specialist_tool_with_it(
    tmp_path: Path,
) -> None:
    class FailsAtStart(CodePlugin):
        @hookimpl
        def oracle_startup(self) -> None:
            raise RuntimeError("no network")

    oracle = build(
        FailsAtStart("weather", tools=("get_forecast",)),
        CodePlugin("clock", tools=("now",)),
        surface=Specialist(["weather.get_forecast", "clock.now"]),
        home=tmp_path,
    )
    try:
        with pytest.raises(SurfaceError, match=r"'weather\.get_forecast'.*no network"):
            await oracle.start()
    finally:
        await oracle.close()


# -- oracle.toml -------------------------------------------------------------------------------


def configured(tmp_path: Path, toml: str, *plugins: object, surface: object = None) -> Oracle:
    (tmp_path / "oracle.toml").write_text(toml)
    return build(*plugins, surface=surface, home=tmp_path)


def test_oracle_toml_sets_a_specialist_surface(tmp_path: Path) -> None:
    oracle = configured(
        tmp_path, '[surface]\nkind = "specialist"\ntools = ["clock.now", "weather.get_radar"]\n'
    )

    assert oracle.surface == Specialist(["clock.now", "weather.get_radar"])
    assert [t.name for t in oracle.requests.tools_for([])] == ["now", "get_radar"]


def test_without_a_surface_table_the_catalog_is_the_default(tmp_path: Path) -> None:
    assert configured(tmp_path, "[plugins.clock]\nx = 1\n").surface == Catalog()
    assert configured(tmp_path, '[surface]\nkind = "catalog"\n').surface == Catalog()


def test_a_surface_given_in_code_wins_over_oracle_toml(tmp_path: Path) -> None:
    toml = '[surface]\nkind = "specialist"\ntools = ["clock.now"]\n'

    assert configured(tmp_path, toml, surface=Catalog()).surface == Catalog()


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ('[surface]\nkind = "catalog"\ntools = ["clock.now"]\n', "cannot be mixed with a tool list"),
        ('[surface]\ntools = ["clock.now"]\n', 'add kind = "specialist"'),
        ('[surface]\nkind = "specialst"\ntools = ["clock.now"]\n', "is not a surface"),
        ('[surface]\nkind = "specialist"\n', "needs tools"),
        ('[surface]\nkind = "specialist"\ntools = "clock.now"\n', "must be a list"),
        ('[surface]\nkind = "specialist"\ntools = []\n', "at least one tool"),
        ('[surface]\nkind = "specialist"\ntools = ["clock.now"]\nmeta = true\n', "unknown key"),
        ('[surface]\nkind = "specialist"\ntools = ["weather"]\n',
         "whole plugin.*weather.get_forecast, weather.get_alerts, weather.get_radar"),
        ('[surface]\nkind = "specialist"\ntools = ["get_radar"]\n', "write weather.get_radar"),
        ('[surface]\nkind = "specialist"\ntools = [1, 2]\n', "as strings"),
    ],
)  # fmt: skip
def test_a_bad_surface_table_is_refused_naming_the_file_and_the_fix(
    tmp_path: Path, toml: str, expected: str
) -> None:
    with pytest.raises(SurfaceError, match=expected) as caught:
        configured(tmp_path, toml)

    assert str(tmp_path / "oracle.toml") in str(caught.value)


def test_a_surface_that_is_not_a_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OracleError, match="table"):
        configured(tmp_path, 'surface = "specialist"\n')


# -- oracle prompt -------------------------------------------------------------------------------


@pytest.mark.slow  # runs the `oracle` command in a subprocess
def test_oracle_prompt_shows_the_specialist_surface_as_the_model_sees_it(
    site: SitePackages,
) -> None:
    site.add(
        "oracle-plugin-fakecast",
        plugin_code("fakecast", tools=("get_forecast", "get_alerts")),
        entry_point="fakecast",
    )
    site.add(
        "oracle-plugin-notes",
        plugin_code("notes", visibility="always", tools=("note",)),
        entry_point="notes",
    )
    home = site.root / "home"
    home.mkdir()
    (home / "oracle.toml").write_text(
        '[surface]\nkind = "specialist"\ntools = ["fakecast.get_alerts", "notes.note"]\n'
    )
    env = {**os.environ, "PYTHONPATH": str(site.root), "ORACLE_HOME": str(home),
           "ORACLE_LOAD_PLUGINS": "fakecast,notes"}  # fmt: skip

    def oracle(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "oracle_core", *args], env=env,
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip

    listed = oracle("prompt", "--json")
    assert listed.returncode == 0, listed.stderr
    report = json.loads(listed.stdout)
    text = oracle("prompt").stdout

    assert report["surface"] == {
        "kind": "specialist",
        "tools": ["fakecast.get_alerts", "notes.note"],
    }
    assert [t["function"]["name"] for t in report["tools"]] == ["get_alerts", "note"]
    assert report["system_prompt"] == DEFAULT_INSTRUCTIONS
    assert report["tokens"]["tier1"] == 0 and report["tokens"]["meta_tools"] == 0
    assert report["tokens"]["tool_schemas"] == sum(report["tokens"]["per_tool"].values())
    assert "Surface: specialist, exactly 2 tool(s): fakecast.get_alerts, notes.note" in text
    assert "no Tier-1 block on a specialist surface" in text
    assert "list_capabilities" not in text

    (home / "oracle.toml").write_text('[surface]\nkind = "specialist"\ntools = ["fakecast"]\n')
    failed = oracle("prompt")
    assert failed.returncode == 2  # a configuration error, as every other one
    assert "whole plugin" in failed.stderr and "fakecast.get_forecast" in failed.stderr
    assert "Traceback" not in failed.stderr
    listed = oracle("plugins")  # still lists the tools, so the operator can fix the table
    assert listed.returncode == 0, listed.stderr
    assert "get_forecast, get_alerts" in listed.stdout
    assert "Surface: [surface] in" in listed.stdout and "whole plugin" in listed.stdout
