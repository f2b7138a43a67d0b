"""A deferral record edited in the start-up cache gives no plugin a tier or a name it lacks.

A deferred plugin is listed and shown from its record in ``$ORACLE_HOME/cache`` alone, not
imported. Before, a record edited to ``always`` showed and ran an on-demand tool without
``load_capability``, and a record naming a tool ``load_capability`` made ``Oracle()`` raise.
Seeded variants (edited tiers, reserved and malformed names, wrong types, mismatched
names): the start goes on with one warning, the plugin is imported and checked as without a
cache, its tool stays on-demand (not shown, not run before it is loaded), and the record is
rebuilt (the next start defers the plugin again, without a warning).
"""

from __future__ import annotations

import json
import logging
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import SitePackages, plugin_code

from oracle_core import Oracle
from oracle_core.plugins.core_tools import META_TOOL_NAMES
from oracle_core.store.memory import MemoryCheckpointer
from oracle_core.testing import ScriptedModel

SEED = 38
ALPHA = "oracle_plugin_alpha"
Edit = Callable[[dict[str, Any]], None]


def _start(site: SitePackages, model: ScriptedModel | None = None) -> Oracle:
    for module in site.modules:
        sys.modules.pop(module, None)
    return Oracle(
        settings=site.settings(),
        path=[str(site.root)],
        model=model or ScriptedModel(),
        checkpointer=MemoryCheckpointer(),
    )


def _cache(site: SitePackages) -> Path:
    [path] = (site.root / "home" / "cache").glob("plugins-*.json")
    return path


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "was not trusted" in r.getMessage()
    ]


def _manifest(**changes: Any) -> Edit:
    def edit(record: dict[str, Any]) -> None:
        record["manifest"] = json.dumps({**json.loads(record["manifest"]), **changes})

    return edit


def _tool(**changes: Any) -> Edit:
    def edit(record: dict[str, Any]) -> None:
        record["tools"][0].update(changes)

    return edit


def _option(**changes: Any) -> Edit:
    def edit(record: dict[str, Any]) -> None:
        record["tools"][0]["options"].update(changes)

    return edit


def _field(**changes: Any) -> Edit:
    return lambda record: record.update(changes)


def _twice(record: dict[str, Any]) -> None:
    record["tools"].append(dict(record["tools"][0]))


def _variants(rng: random.Random) -> list[tuple[str, Edit]]:
    """Seeded edits of alpha's deferral record, each one no start may trust."""
    made: list[tuple[str, Edit]] = []
    for tier in ("always", "silent"):
        made += [
            (f"manifest {tier}", _manifest(visibility=tier)),
            (f"tool {tier}", _option(visibility=tier)),
            (
                f"both {tier}",
                lambda r, t=tier: (_manifest(visibility=t)(r), _option(visibility=t)(r)),
            ),
        ]
    for name in sorted(META_TOOL_NAMES):
        cased = "".join(c.upper() if rng.random() < 0.5 else c for c in name)
        made += [(f"named {name}", _tool(name=name)), (f"named {cased}", _tool(name=cased))]
    for _ in range(6):
        letters = "".join(rng.choice("abcxyz_") for _ in range(rng.randint(1, 10)))
        bad = rng.choice([" ", "!", ".", "/", "\n", "é", "\x00"])
        at = rng.randint(0, len(letters))
        made.append(
            (
                f"named {letters[:at] + bad + letters[at:]!r}",
                _tool(name=letters[:at] + bad + letters[at:]),
            )
        )
    made += [
        ("named empty", _tool(name="")),
        ("named 65 long", _tool(name="a" * 65)),
        ("the tool twice", _twice),
        ("another plugin's name", _field(name="beta")),
        ("manifest renamed", _manifest(name="gamma")),
        ("manifest not JSON", _field(manifest="{not json")),
        ("manifest without summary", _manifest(summary="")),
        ("undeclared connection", _option(connections=["github"])),
        ("extra record field", _field(extra=1)),
        ("extra option", _option(secret=True)),
    ]
    wrong: list[tuple[str, Any]] = [
        ("name", 1), ("manifest", {}), ("tools", "alpha_ping"), ("warnings", [["a"]]),
        ("hooks", "oracle_tools"), ("config", 1), ("files", "x"), ("files", [[1, 2, 3]]),
    ]  # fmt: skip
    made += [(f"{key} = {value!r}", _field(**{key: value})) for key, value in wrong]
    options: list[tuple[str, Any]] = [
        ("timeout", "3"), ("approval", "yes"), ("connections", "github"), ("background", 1),
    ]  # fmt: skip
    made += [(f"option {k} = {v!r}", _option(**{k: v})) for k, v in options]
    made += [("async = 'yes'", _tool(**{"async": "yes"})), ("options = []", _tool(options=[]))]
    return made


def test_an_edited_deferral_record_is_rebuilt_and_shows_no_hidden_tool(
    site: SitePackages, caplog: pytest.LogCaptureFixture
) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    _start(site).close_sync()  # cold: imports, checks, writes the record
    _start(site).close_sync()
    assert ALPHA not in sys.modules  # the record is trusted: a warm start defers alpha
    pristine = _cache(site).read_text()
    variants = _variants(random.Random(SEED))
    assert len(variants) == 44

    for label, edit in variants:
        document = json.loads(pristine)
        [entry] = [e for e in document["plugins"].values() if "deferred" in e]
        edit(entry["deferred"])
        _cache(site).write_text(json.dumps(document))
        model = ScriptedModel()
        model.reply_tool_call("alpha_ping", {"text": "hi"})
        model.reply_text("done")
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="oracle_core.plugins"):
            oracle = _start(site, model)  # never raises
            result = oracle.run_sync("t", "ping")
        oracle.close_sync()

        assert ALPHA in sys.modules, label  # imported and checked, not built from the record
        assert [t.name for t in oracle.registry.plugins["alpha"].tools] == ["alpha_ping"], label
        assert oracle.registry.failures == [], label
        assert result.status == "completed", label
        assert "alpha_ping" not in model.request(1).tool_names, label  # on-demand: not shown
        assert "alpha_ping:hi" not in str(model.request(2).messages[-1]["content"]), label
        assert len(_warnings(caplog)) == 1, label

        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="oracle_core.plugins"):
            _start(site).close_sync()
        assert _warnings(caplog) == [], label  # the record was written anew
        assert ALPHA not in sys.modules, label  # and is trusted again


def test_the_record_shape_keeps_every_option_a_deferred_tool_has() -> None:
    """An option added to Tool must be added to the record's shape too, or every record
    would be refused (each start warning and importing every plugin)."""
    from oracle_core.plugins.cache_records import ToolOptions
    from oracle_core.plugins.deferred import _option_names

    assert set(ToolOptions.model_fields) == set(_option_names())
