"""The one builder of error tool results (oracle_core/values/tool_errors.py)."""

from __future__ import annotations

import json

from oracle_core.run.executor import error_result as executor_error_result
from oracle_core.values.messages import ToolCall
from oracle_core.values.tool_errors import error_content, error_result, failed_call


def _call() -> ToolCall:
    return ToolCall(id="c1", name="weather__forecast", arguments="{}", thread_id="t", run_id="r")


def test_an_error_result_is_an_error_object_flagged_as_one() -> None:
    failure = ValueError("boom")
    result = error_result(_call(), "it failed: é", failure)
    assert json.loads(result.content) == {"error": "it failed: é"}
    assert "é" in result.content  # non-ASCII is kept as it is
    assert (result.call_id, result.name, result.is_error) == ("c1", "weather__forecast", True)
    assert result.error is failure and not result.refused


def test_a_call_known_by_id_and_name_gets_the_same_result() -> None:
    assert failed_call("c1", "weather__forecast", "no") == error_result(_call(), "no")
    refused = failed_call("c1", "x", "load it first", refused=True)
    assert refused.refused and refused.is_error
    assert refused.content == error_content("load it first")


def test_the_executor_still_offers_the_builder() -> None:
    assert executor_error_result is error_result
