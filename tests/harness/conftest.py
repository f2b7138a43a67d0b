"""The harness is tested black-box: pytest runs small plugin projects in temporary folders.

Inner runs are in-process (``pytester.runpytest()``), so litellm is imported once for the
whole suite rather than once per run.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _litellm_imported_once() -> None:
    """Import litellm in this process before any inner run.

    pytester drops the modules an inner run imported, so without this every inner run would
    import litellm afresh (seconds each). And litellm's ``importlib_metadata`` backport
    deletes the stdlib's distribution finder when first imported and puts its own on
    ``sys.meta_path``; pytester then restores ``sys.meta_path`` without it, and
    ``importlib.metadata`` finds no distribution at all for the rest of the session.
    """
    from oracle_core.environment import import_litellm

    import_litellm()


PROJECT_INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
"""

FORECAST_PLUGIN = '''
"""A small on-demand plugin, shaped like a real one."""

from oracle_core import Example, PluginManifest, ToolContext, hookimpl, tool

CALLS = []


@tool
def get_forecast(place: str, days: int = 3) -> dict:
    """Get the daily forecast for a place.

    Args:
        place: a city or town.
        days: how many days, from 1 to 7.
    """
    CALLS.append(("get_forecast", place, days))
    return {"place": place, "days": days, "summary": "sunny"}


@tool
def forecast_units(ctx: ToolContext) -> str:
    """Say which units forecasts are given in."""
    return ctx.config.get("units", "metric")


@hookimpl
def oracle_manifest():
    return PluginManifest(
        name="forecast",
        summary="Daily forecasts for any place.",
        when_to_use=["the user asks for a forecast"],
        examples=[Example(user="Forecast for Lisbon?", tool="get_forecast", args={"place": "Lisbon"})],
    )


@hookimpl
def oracle_tools():
    return [get_forecast, forecast_units]
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A plugin project's folder: ``forecast_plugin.py`` and a pytest configuration.

    Async tests run without markers (``asyncio_mode = auto``), as in the plugin templates.
    """
    pytester.makeini(PROJECT_INI)
    pytester.makepyfile(forecast_plugin=FORECAST_PLUGIN)
    return pytester
