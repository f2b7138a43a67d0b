"""Testing helpers for plugin authors (see docs/testing.md).

The pytest fixtures ``oracle_model`` (in-process), ``oracle_http_model`` (over HTTP) and
``oracle_factory`` come with oracle-core (its ``pytest11`` entry point); the helpers below are
imported from here::

    from oracle_core.testing import assert_tool_called, check_plugin, run_turn

Names are imported on first use: pytest imports this package (for its plugin) in every
project where oracle-core is installed, and a project that never uses the harness should
not pay for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oracle_core.testing.assertions import (
        assert_shown,
        assert_tool_called,
        assert_tool_not_called,
        assert_tool_refused,
    )
    from oracle_core.testing.conformance import (
        DEFAULT_TIER1_ENTRY_BUDGET,
        ConformanceError,
        check_plugin,
    )
    from oracle_core.testing.drive import call_tool, run_turn
    from oracle_core.testing.exchange import Exchange, Recording, load_recording
    from oracle_core.testing.findability import assert_findable
    from oracle_core.testing.function_schema import function_schema_problems
    from oracle_core.testing.guard import RealModelRequestError, refuse_model_requests
    from oracle_core.testing.harness import OracleFactory
    from oracle_core.testing.openai_server import FakeOpenAI
    from oracle_core.testing.script import Reply, SeenRequest
    from oracle_core.testing.scripted import (
        ModelCall,
        ReplyFunction,
        ScriptedModel,
        ScriptedModelBase,
    )
    from oracle_core.testing.scripted_http import HTTPScriptedModel

_HOMES = {
    "assert_shown": "assertions",
    "assert_tool_called": "assertions",
    "assert_tool_not_called": "assertions",
    "assert_tool_refused": "assertions",
    "DEFAULT_TIER1_ENTRY_BUDGET": "conformance",
    "ConformanceError": "conformance",
    "check_plugin": "conformance",
    "call_tool": "drive",
    "run_turn": "drive",
    "Exchange": "exchange",
    "Recording": "exchange",
    "load_recording": "exchange",
    "assert_findable": "findability",
    "function_schema_problems": "function_schema",
    "RealModelRequestError": "guard",
    "refuse_model_requests": "guard",
    "OracleFactory": "harness",
    "FakeOpenAI": "openai_server",
    "Reply": "script",
    "SeenRequest": "script",
    "ModelCall": "scripted",
    "ReplyFunction": "scripted",
    "ScriptedModel": "scripted",
    "ScriptedModelBase": "scripted",
    "HTTPScriptedModel": "scripted_http",
}

__all__ = [
    "DEFAULT_TIER1_ENTRY_BUDGET",
    "ConformanceError",
    "Exchange",
    "FakeOpenAI",
    "HTTPScriptedModel",
    "ModelCall",
    "OracleFactory",
    "RealModelRequestError",
    "Recording",
    "Reply",
    "ReplyFunction",
    "ScriptedModel",
    "ScriptedModelBase",
    "SeenRequest",
    "assert_findable",
    "assert_shown",
    "assert_tool_called",
    "assert_tool_not_called",
    "assert_tool_refused",
    "call_tool",
    "check_plugin",
    "function_schema_problems",
    "load_recording",
    "refuse_model_requests",
    "run_turn",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
