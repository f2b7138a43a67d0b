"""The start-up cache: a warm start builds no tool schema; a change or a bad file rebuilds."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import SitePackages

import oracle_core.authoring.tools.schema
from oracle_core import Oracle

PLUGIN = '''
from typing import Literal

from oracle_core import PluginManifest, hookimpl, tool


@tool
def forecast(city: str, units: Literal["metric", "imperial"] = "metric"{extra}) -> str:
    """Get the weather forecast for a city.

    Args:
        city: Place name.
        units: Unit system.
    """
    return city


@hookimpl
def oracle_manifest():
    return PluginManifest(name="weather", summary="Weather forecasts.",
                          when_to_use=["the user asks about the weather"])


@hookimpl
def oracle_tools():
    return [forecast]
'''


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The name of every argument model pydantic builds for a tool, in order."""
    made: list[str] = []
    real = oracle_core.authoring.tools.schema.create_model  # type: ignore[attr-defined]

    def counting(name: str, /, **kwargs: Any) -> Any:
        made.append(name)
        return real(name, **kwargs)

    monkeypatch.setattr(oracle_core.authoring.tools.schema, "create_model", counting)
    yield made


def start(site: SitePackages) -> Oracle:
    """A new oracle in what a new process would see: the plugin module imported afresh."""
    for module in site.modules:
        sys.modules.pop(module, None)
    return site.oracle(ORACLE_LOAD_PLUGINS="weather")


def cache_files(site: SitePackages) -> list[Path]:
    return sorted((site.root / "home" / "cache").glob("plugins-*.json"))


def test_a_warm_start_builds_no_tool_schema(site: SitePackages, builds: list[str]) -> None:
    site.add("oracle-plugin-weather", PLUGIN.format(extra=""), entry_point="weather")
    cold = start(site).registry.tools["forecast"].tool.parameters
    assert builds == ["forecast_arguments"]

    warm = start(site).registry.tools["forecast"].tool

    assert builds == ["forecast_arguments"]  # nothing built on the warm start
    assert warm.parameters == cold
    assert warm.validate({"city": "Oslo"}) == {"city": "Oslo", "units": "metric"}


def test_an_edited_plugin_module_is_checked_again(site: SitePackages, builds: list[str]) -> None:
    site.add("oracle-plugin-weather", PLUGIN.format(extra=""), entry_point="weather")
    start(site)
    (site.root / "oracle_plugin_weather.py").write_text(PLUGIN.format(extra=", days: int = 3"))

    tool = start(site).registry.tools["forecast"].tool

    assert builds == ["forecast_arguments", "forecast_arguments"]
    assert list(tool.parameters["properties"]) == ["city", "units", "days"]


def test_a_corrupt_cache_file_is_ignored_and_rewritten(
    site: SitePackages, builds: list[str]
) -> None:
    site.add("oracle-plugin-weather", PLUGIN.format(extra=""), entry_point="weather")
    start(site)
    [path] = cache_files(site)
    path.write_text('{"format": 1, "plugins": {"oracle_plugin_weather:weather": [')

    registry = start(site).registry

    assert list(registry.tools) == ["forecast"]
    assert registry.failures == []
    assert len(builds) == 2
    assert "oracle_plugin_weather:weather" in json.loads(path.read_text())["plugins"]


def test_a_cache_entry_of_the_wrong_shape_is_ignored(site: SitePackages, builds: list[str]) -> None:
    site.add("oracle-plugin-weather", PLUGIN.format(extra=""), entry_point="weather")
    start(site)
    [path] = cache_files(site)
    data = json.loads(path.read_text())
    data["plugins"]["oracle_plugin_weather:weather"]["schemas"] = {"x": "not a schema"}
    path.write_text(json.dumps(data))

    tool = start(site).registry.tools["forecast"].tool

    assert len(builds) == 2
    assert tool.parameters["properties"]["units"]["enum"] == ["metric", "imperial"]


def test_plugins_given_in_code_are_never_cached(tmp_path: Path) -> None:
    from oracle_core.settings import Settings

    class Plugin:
        @oracle_core.hookimpl
        def oracle_manifest(self) -> oracle_core.PluginManifest:
            return oracle_core.PluginManifest(name="code", summary="In code.", when_to_use=["x"])

    Oracle(
        [Plugin()], entry_points=False, settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)})
    )

    assert not (tmp_path / "cache").exists()


RICH = '''
from typing import Literal

from pydantic import BaseModel

from oracle_core import PluginManifest, hookimpl, tool


class Stop(BaseModel):
    city: str
    nights: int = 1


@tool
def plan(stops: list[Stop], budget: float | None = None, mode: Literal["train", "car"] = "train",
         tags: dict[str, str] | None = None) -> str:
    """Plan a trip.

    Args:
        stops: Where to stay, in order.
        budget: At most this much.
        mode: How to travel.
        tags: Labels.
    """
    return "ok"


@tool
def ping(text: str, times: int = 1) -> str:
    """Echo the text."""
    return text


@hookimpl
def oracle_manifest():
    return PluginManifest(name="trips", summary="Trip plans.", when_to_use=["plan a trip"])


@hookimpl
def oracle_tools():
    return [plan, ping]
'''


def test_a_cold_start_lets_go_of_the_schemas_it_stored_and_reads_back_the_same(
    site: SitePackages, builds: list[str]
) -> None:
    """A cold start keeps each schema it built only as the text it stores: the tool reads it
    back on first need, equal to a schema built afresh, and nothing is built twice."""
    from oracle_core import tool as make_tool

    site.add("oracle-plugin-trips", RICH, entry_point="trips")
    for module in site.modules:
        sys.modules.pop(module, None)
    registry = site.oracle(ORACLE_LOAD_PLUGINS="trips").registry
    built = list(builds)

    for name in ("plan", "ping"):
        shown = registry.tools[name].tool
        assert shown._arguments._schema is None  # let go of at start
        assert shown.parameters == make_tool(shown.function).parameters
    assert builds.count("plan_arguments") == built.count("plan_arguments") + 1  # the fresh one
    arguments = registry.tools["plan"].tool.validate({"stops": [{"city": "Oslo"}], "mode": "car"})
    assert [(s.city, s.nights) for s in arguments["stops"]] == [("Oslo", 1)]
    assert (arguments["mode"], arguments["budget"]) == ("car", None)
