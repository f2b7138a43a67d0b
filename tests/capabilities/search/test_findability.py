"""How a plugin author sees and tests how their plugin is found: the findability check and
the manifest warnings for plugins search will find badly."""

from __future__ import annotations

from typing import Any

import pytest

from oracle_core import Example, PluginManifest, Tool
from oracle_core.plugins.discovery import PluginSource
from oracle_core.plugins.findability import (
    findability_advice,
    findability_warnings,
    missing_guidance,
    summary_repeats_name,
    vague_tool_names,
)
from oracle_core.plugins.registry import Plugin
from oracle_core.plugins.validate import HookResults, validate
from oracle_core.testing import assert_findable
from oracle_core.testing.findability import Findability, FindabilityError, distractors


def _never(**_: Any) -> Any:
    raise AssertionError("not called")


def _tool(name: str, description: str) -> Tool:
    parameters = {"type": "object", "properties": {"amount": {"type": "number"}}}
    return Tool(name, description, parameters, _never)


def currency(*, examples: bool = True, tool: str = "convert_currency") -> Plugin:
    manifest = PluginManifest(
        name="currency",
        summary="Exchange rates and conversions between currencies.",
        when_to_use=["the user converts money between currencies"],
        examples=[Example(user="convert 20 euros to dollars", tool=tool, args={"amount": 20})]
        if examples
        else [],
        tags=["fx", "exchange"],
    )
    return Plugin(manifest, PluginSource(name="currency"), [_tool(tool, "Convert an amount.")])


@pytest.fixture(scope="module")
def findability() -> Findability:
    return Findability()


def test_the_distractor_catalog_ships_with_the_package() -> None:
    plugins = distractors()

    assert len(plugins) > 2000
    assert len({p.name for p in plugins}) == len(plugins)


def test_a_plugin_found_by_its_examples_and_requests_passes(findability: Findability) -> None:
    findability.check(currency(), ["exchange 50 dollars into euros"], within=3)


def test_assert_findable_builds_its_own_catalog_when_none_is_given() -> None:
    assert_findable(currency(), requests=["exchange rate of the euro"], within=6)


def test_a_miss_names_the_request_its_rank_and_what_outranked_it(
    findability: Findability,
) -> None:
    with pytest.raises(FindabilityError) as caught:
        findability.check(currency(), ["weather forecast for Porto tomorrow"], within=3)

    message = str(caught.value)
    assert "plugin 'currency' is not found within the first 3 candidates" in message
    assert "for 1 of 2 request(s)" in message  # its example passed
    assert "'weather forecast for Porto tomorrow': " in message
    assert "outranked by x-" in message and "weather" in message
    assert caught.value.misses[0].rank is None


def test_a_miss_shows_hints_for_a_manifest_without_examples(findability: Findability) -> None:
    with pytest.raises(FindabilityError) as caught:
        findability.check(currency(examples=False), ["book a table for two tonight"])

    assert "hints:" in str(caught.value)
    assert "examples" in str(caught.value) and "is empty" in str(caught.value)


def test_a_plugin_without_examples_or_requests_is_told_what_to_add(
    findability: Findability,
) -> None:
    with pytest.raises(AssertionError, match="has no examples and no requests"):
        findability.check(currency(examples=False))


def test_a_silent_plugin_is_never_findable(findability: Findability) -> None:
    silent = currency()
    silent = Plugin(
        silent.manifest.model_copy(update={"visibility": "silent"}), silent.source, silent.tools
    )

    with pytest.raises(AssertionError, match="silent"):
        findability.check(silent)


def test_the_catalog_is_reused_and_only_the_plugin_under_test_is_indexed_again(
    findability: Findability,
) -> None:
    findability.check(currency(), within=3)
    index = findability._search.index if findability._search else None
    assert index is not None
    embedded = index.embedded

    findability.check(currency(tool="convert_money"), within=3)

    assert 0 < index.embedded - embedded <= 10  # one small plugin's texts, not 2,000


def test_a_shipped_plugin_is_found_by_its_own_examples(findability: Findability) -> None:
    weather = pytest.importorskip("oracle_plugin_weather")

    findability.check(weather, ["weather in porto", "will it rain in Lima tomorrow"], within=3)


# -- manifest warnings ------------------------------------------------------------------------


def _manifest(**fields: Any) -> PluginManifest:
    fields.setdefault("when_to_use", ["the user converts money"])
    return PluginManifest(name="currency", **fields)


@pytest.mark.parametrize("name", ["run", "do", "execute", "Handle", "process_", "RUN"])
def test_a_tool_name_that_says_nothing_is_warned_about(name: str) -> None:
    warnings = vague_tool_names(_manifest(summary="Exchange rates."), [_tool(name, "Convert.")])

    assert len(warnings) == 1
    assert warnings[0].field == f"tools.{name}"
    assert "says nothing about what it does" in warnings[0].message


@pytest.mark.parametrize("name", ["convert_currency", "run_query_on_ledger", "get_rates"])
def test_a_tool_named_for_its_task_is_not(name: str) -> None:
    assert vague_tool_names(_manifest(summary="Exchange rates."), [_tool(name, "x")]) == []


def test_a_summary_that_repeats_the_name_is_warned_about() -> None:
    assert summary_repeats_name(_manifest(summary="The currency plugin."))
    assert summary_repeats_name(_manifest(summary="Currency.", title="Currency"))
    assert not summary_repeats_name(_manifest(summary="Exchange rates and conversions."))


def test_missing_examples_are_warned_about_unless_the_plugin_is_silent() -> None:
    found = missing_guidance(_manifest(summary="Exchange rates."))

    assert [w.field for w in found] == ["examples"]
    assert missing_guidance(_manifest(summary="Exchange rates.", visibility="silent")) == []


def test_advice_lists_every_rule_and_warnings_only_the_defects() -> None:
    manifest = _manifest(summary="The currency plugin.")
    tools = [_tool("run", "Convert.")]

    assert [w.field for w in findability_advice(manifest, tools)] == [
        "summary",
        "examples",
        "tools.run",
    ]
    assert [w.field for w in findability_warnings(manifest, tools)] == ["tools.run"]


def test_the_validator_shows_a_vague_tool_name_as_a_warning() -> None:
    manifest = _manifest(summary="Exchange rates and conversions.")
    results = HookResults(
        results={"oracle_manifest": [manifest], "oracle_tools": [[_tool("do", "x")]]}
    )

    found = validate("currency", results)

    assert found.manifest is not None
    assert any("'do' says nothing about what it does" in w.message for w in found.warnings)
