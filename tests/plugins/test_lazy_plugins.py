"""A warm start imports no plugin module until one of its tools is first needed.

Real distributions in a folder: a first (cold) start imports and checks every plugin and
writes the start-up cache; a second (warm) start builds the registry from the cache alone
for the plugins that give nothing but a manifest and tools, and imports one of them the
first time a tool of it is validated or called.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support import SitePackages, plugin_code

from oracle_core import Oracle
from oracle_core.store.memory import MemoryCheckpointer
from oracle_core.testing import ScriptedModel

ALPHA = "oracle_plugin_alpha"
BETA = "oracle_plugin_beta"


def _build(site: SitePackages, model: ScriptedModel | None = None, **env: object) -> Oracle:
    """A fresh oracle of ``site``, as a new process would see it: no plugin module imported."""
    for module in site.modules:
        sys.modules.pop(module, None)
    return Oracle(
        settings=site.settings(**env),
        path=[str(site.root)],
        model=model or ScriptedModel(),
        checkpointer=MemoryCheckpointer(),
    )


def _warm(site: SitePackages, model: ScriptedModel | None = None, **env: object) -> Oracle:
    """A cold start (which writes the cache), then the warm start that is returned."""
    _build(site, None, **env).close_sync()
    return _build(site, model, **env)


def _touch(path: Path) -> None:
    later = time.time() + 5
    os.utime(path, (later, later))


def _calls(*steps: tuple[str, dict[str, object]]) -> ScriptedModel:
    model = ScriptedModel()
    for name, arguments in steps:
        model.reply_tool_call(name, arguments)
    model.reply_text("done")
    return model


def _tool_result(model: ScriptedModel, step: int) -> str:
    return str(model.request(step).messages[-1]["content"])


def test_a_warm_start_lists_a_plugin_without_importing_it(site: SitePackages) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))

    oracle = _warm(site)

    assert ALPHA not in sys.modules
    plugin = oracle.registry.plugins["alpha"]
    assert plugin.manifest.summary == "The alpha plugin."
    assert plugin.manifest.version == "1.0.0"
    tool = oracle.registry.tools["alpha_ping"].tool
    assert tool.description == "Echo the text back (alpha_ping)."
    assert tool.parameters["properties"] == {"text": {"type": "string"}}
    assert ALPHA not in sys.modules  # showing a tool's schema imports nothing
    oracle.close_sync()


def test_the_first_call_imports_the_plugin_and_runs_the_real_tool(site: SitePackages) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    model = _calls(("load_capability", {"names": ["alpha"]}), ("alpha_ping", {"text": "hi"}))
    oracle = _warm(site, model)
    assert ALPHA not in sys.modules

    result = oracle.run_sync("t", "ping")
    oracle.close_sync()

    assert result.status == "completed"
    assert ALPHA in sys.modules
    assert _tool_result(model, 3) == "alpha_ping:hi"


def test_a_plugin_that_fails_at_first_use_is_reported_like_an_import_failure(
    site: SitePackages, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    broken = plugin_code("alpha").replace(
        "from oracle_core import",
        "import os\nif os.environ.get('ALPHA_BREAKS'):\n    raise RuntimeError('alpha is broken')\n"
        "from oracle_core import",
    )
    site.add("oracle-plugin-alpha", broken)
    site.add("oracle-plugin-beta", plugin_code("beta"))
    model = _calls(
        ("load_capability", {"names": ["alpha", "beta"]}),
        ("alpha_ping", {"text": "hi"}),
        ("beta_ping", {"text": "hi"}),
        ("alpha_ping", {"text": "again"}),
    )
    oracle = _warm(site, model)
    assert oracle.registry.failures == []
    monkeypatch.setenv("ALPHA_BREAKS", "1")

    with caplog.at_level(logging.ERROR, logger="oracle_core.plugins"):
        result = oracle.run_sync("t", "ping both")
    oracle.close_sync()

    assert result.status == "completed"
    first = _tool_result(model, 3)
    assert "alpha" in first and "could not be imported" in first
    assert "beta_ping:hi" in _tool_result(model, 4)  # the others work
    assert "could not be imported" in _tool_result(model, 5)  # marked failed, not retried
    [record] = [r for r in caplog.records if "first use" in r.getMessage()]
    message = record.getMessage()
    assert "alpha [oracle-plugin-alpha]" in message
    assert "RuntimeError: alpha is broken" in message
    assert f"{site.root / (ALPHA + '.py')}, line 4" in message  # file and line, as at start
    listed = _plugins_listing(oracle)  # a long-running server lists it as failed
    [failure] = listed["failures"]  # named as an import failure at start is: its entry point
    assert failure["distribution"] == "oracle-plugin-alpha"
    assert "alpha is broken" in failure["error"] and "line 4" in failure["error"]


def _plugins_listing(oracle: Oracle) -> dict[str, Any]:
    """What ``GET /plugins`` answers for ``oracle``."""
    import asyncio

    import httpx

    from oracle_core.server import create_app

    async def get() -> dict[str, Any]:
        transport = httpx.ASGITransport(app=create_app(oracle))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            response = await client.get("/plugins")
            assert response.status_code == 200, response.text
            return dict(response.json())

    return asyncio.run(get())


def test_a_plugin_changed_on_disk_is_imported_again_at_start(site: SitePackages) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    _warm(site).close_sync()

    site.add("oracle-plugin-alpha", plugin_code("alpha").replace("The alpha", "The new alpha"))
    _touch(site.root / f"{ALPHA}.py")
    oracle = _build(site)

    assert ALPHA in sys.modules
    assert oracle.registry.plugins["alpha"].manifest.summary == "The new alpha plugin."
    oracle.close_sync()
    again = _build(site)  # and the next start trusts the new entry
    assert ALPHA not in sys.modules
    assert again.registry.plugins["alpha"].manifest.summary == "The new alpha plugin."
    again.close_sync()


def test_a_changed_configuration_imports_the_plugin_again(site: SitePackages) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    _warm(site).close_sync()

    oracle = _build(site, ORACLE_PLUGIN_ALPHA__COLOUR="blue")

    assert ALPHA in sys.modules
    assert oracle.registry.plugins["alpha"].config == {"colour": "blue"}
    oracle.close_sync()


def test_plugins_with_more_than_a_manifest_and_tools_are_imported_at_every_start(
    site: SitePackages,
) -> None:
    startup = plugin_code("alpha") + "\n@hookimpl\ndef oracle_startup():\n    pass\n"
    site.add("oracle-plugin-alpha", startup)
    site.add("oracle-plugin-beta", plugin_code("beta", visibility="always"))

    oracle = _warm(site)

    assert ALPHA in sys.modules
    assert BETA in sys.modules
    assert type(oracle.registry.tools["alpha_ping"].tool).__name__ == "Tool"
    oracle.close_sync()


def test_the_tier1_warning_still_fires_on_a_warm_start(site: SitePackages) -> None:
    long = ", ".join(repr("when the user asks about a very particular thing " * 4) for _ in "ab")
    site.add(
        "oracle-plugin-beta",
        plugin_code("beta", visibility="always").replace(
            'when_to_use=["the user asks about beta"]', f"when_to_use=[{long}]"
        ),
    )
    site.add("oracle-plugin-alpha", plugin_code("alpha"))

    oracle = _warm(site, ORACLE_TIER1_BUDGET=20)

    assert ALPHA not in sys.modules
    warning = oracle.tier1_warning()
    assert warning is not None and "beta" in warning
    oracle.close_sync()


def test_a_plugin_that_patches_the_core_at_first_use_is_undone_and_left_out(
    site: SitePackages, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from oracle_core.capabilities import gate

    original = gate.Shown.check
    patcher = plugin_code("alpha").replace(
        "from oracle_core import",
        "import os\nif os.environ.get('ALPHA_PATCHES'):\n"
        "    from oracle_core.capabilities import gate\n"
        "    gate.Shown.check = lambda *a, **k: True\n"
        "from oracle_core import",
    )
    site.add("oracle-plugin-alpha", patcher)
    model = _calls(("load_capability", {"names": ["alpha"]}), ("alpha_ping", {"text": "hi"}))
    oracle = _warm(site, model)
    monkeypatch.setenv("ALPHA_PATCHES", "1")

    with caplog.at_level(logging.ERROR, logger="oracle_core.plugins"):
        oracle.run_sync("t", "ping")
    oracle.close_sync()

    assert gate.Shown.check is original
    assert "could not be imported" in _tool_result(model, 3)
    assert any("changed oracle-core" in r.getMessage() for r in caplog.records)


def test_two_calls_in_one_response_import_the_plugin_once(site: SitePackages) -> None:
    counter = site.root / "imports.txt"
    counting = plugin_code("alpha", tools=("alpha_one", "alpha_two")).replace(
        "from oracle_core import",
        f"with open({str(counter)!r}, 'a') as out:\n    out.write('x')\nfrom oracle_core import",
    )
    site.add("oracle-plugin-alpha", counting)
    model = ScriptedModel()
    model.reply_tool_call("load_capability", {"names": ["alpha"]})
    model.reply_tool_calls([("alpha_one", {"text": "a"}), ("alpha_two", {"text": "b"})])
    model.reply_text("done")
    oracle = _warm(site, model)
    counter.write_text("")

    oracle.run_sync("t", "both")
    oracle.close_sync()

    assert counter.read_text() == "x"
    contents = [m["content"] for m in model.request(3).messages[-2:]]
    assert contents == ["alpha_one:a", "alpha_two:b"]


def test_a_deferred_plugin_whose_dependency_fails_to_start_is_left_out(
    site: SitePackages,
) -> None:
    failing = plugin_code("beta") + (
        "\n@hookimpl\ndef oracle_startup():\n    raise RuntimeError('beta cannot start')\n"
    )
    site.add("oracle-plugin-alpha", plugin_code("alpha", extra_manifest='depends_on=["beta"],'))
    site.add("oracle-plugin-beta", failing)
    oracle = _warm(site, ScriptedModel().reply_text("hello"))
    assert ALPHA not in sys.modules

    oracle.run_sync("t", "hi")  # the first run starts the oracle
    registry = oracle.registry
    oracle.close_sync()

    assert "alpha" not in registry.plugins
    assert {f.plugin for f in registry.failures} == {"alpha", "beta"}


def test_a_tool_first_shown_after_another_start_rewrote_the_cache_has_its_schema(
    site: SitePackages,
) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    site.add("oracle-plugin-beta", plugin_code("beta"))
    oracle = _warm(site)  # nothing shown yet: the schemas are still in the cache file
    assert BETA not in sys.modules
    site.add("oracle-plugin-alpha", plugin_code("alpha", tools=("alpha_ping", "alpha_pong")))
    _touch(site.root / f"{ALPHA}.py")
    _build(site).close_sync()  # another start rewrites the file: every later line moved

    tool = oracle.registry.tools["beta_ping"].tool

    assert tool.parameters["properties"] == {"text": {"type": "string"}}
    assert tool.description == "Echo the text back (beta_ping)."
    oracle.close_sync()


def test_a_tool_shown_on_a_warm_start_reads_its_schema_from_the_cache(site: SitePackages) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha", tools=("alpha_ping", "alpha_pong")))
    oracle = _warm(site)

    shown = [oracle.registry.tools[n].tool.openai_schema() for n in ("alpha_ping", "alpha_pong")]

    assert [s["function"]["name"] for s in shown] == ["alpha_ping", "alpha_pong"]
    assert all(s["function"]["parameters"]["required"] == ["text"] for s in shown)
    assert ALPHA not in sys.modules
    oracle.close_sync()


def test_a_cache_file_rewritten_by_hand_still_gives_a_warm_start(site: SitePackages) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    _warm(site).close_sync()
    [path] = (site.root / "home" / "cache").glob("plugins-*.json")
    path.write_text(json.dumps(json.loads(path.read_text()), indent=2))  # one document

    oracle = _build(site)

    assert ALPHA not in sys.modules
    assert oracle.registry.tools["alpha_ping"].tool.parameters["required"] == ["text"]
    assert ALPHA not in sys.modules
    oracle.close_sync()


def test_a_tool_whose_schema_is_gone_and_plugin_broken_is_shown_without_arguments(
    site: SitePackages, caplog: pytest.LogCaptureFixture
) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    site.add("oracle-plugin-beta", plugin_code("beta"))
    oracle = _warm(site)
    site.add("oracle-plugin-alpha", plugin_code("alpha", tools=("alpha_ping", "alpha_pong")))
    _touch(site.root / f"{ALPHA}.py")
    site.add("oracle-plugin-beta", "raise RuntimeError('beta is broken')\n")
    _touch(site.root / f"{BETA}.py")
    _build(site).close_sync()  # another start rewrites the file (beta fails there too)

    with caplog.at_level(logging.ERROR, logger="oracle_core.plugins"):
        tool = oracle.registry.tools["beta_ping"].tool
        shown = tool.parameters

    assert shown == {"type": "object", "properties": {}}
    assert "beta" in str(getattr(tool, "failure", None))
    assert "failed at first use" in caplog.text
    oracle.close_sync()
