"""Every ```toml block of README.md and docs/*.md works when copied where it says.

A block whose first line is ``# pyproject.toml`` is a package's: it must parse and name its
plugins in the ``oracle.plugins`` entry point group. Any other block is an ``oracle.toml``:
written into a fresh ``ORACLE_HOME``, it is read by the core's own settings (every table and
key; no error and no warning), its ``[mcp.<name>]`` tables by the MCP config reader, and,
without MCP servers to start, an oracle of the installed plugins (and of the docs' example
plugins) is built from it, loses no plugin, and answers a turn with the offline ``demo``
model, which litellm's price table does not know, like any local model.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from doc_blocks import Block, all_blocks
from support import SitePackages, plugin_code

from oracle_core import Oracle, Settings
from oracle_core.plugins.mcp.config import servers_from_config

BLOCKS = all_blocks("toml")
PACKAGE_FILES = [b for b in BLOCKS if b.file == "pyproject.toml"]
ORACLE_TOMLS = [b for b in BLOCKS if b.file != "pyproject.toml"]

EXAMPLE_PLUGINS = ("search", "reports")
"""Plugins the docs configure as an operator's own (not in this repository): installed as
stand-ins that take any settings, so their tables are read like those of installed plugins."""

_VARIABLE = re.compile(r"""["']\$(?P<name>[A-Z_][A-Z0-9_]*)["']""")


def referred_variables(text: str) -> dict[str, str]:
    """A value for each environment variable the block refers to (``"$VAR"``, ``"$env" = ...``)."""
    names = set(_VARIABLE.findall(text)) | set(re.findall(r'"\$env"\s*=\s*"(\w+)"', text))
    return {name: "a-placeholder-value" for name in names}


def written(block: Block, home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    (home / "oracle.toml").write_text(block.text, encoding="utf-8")
    return {"ORACLE_HOME": str(home), "ORACLE_MODEL": "demo", **referred_variables(block.text)}


def read_every_table(settings: Settings) -> None:
    """Read the file the way every command does: each table through the function the oracle
    reads it with (``[budgets]``, ``[approvals]``, ``[surface]``, ...), a name nothing reads
    refused."""
    settings.check_config()


async def one_turn(oracle: Oracle) -> str:
    try:
        await oracle.run_deps()  # [approvals] and [budgets] are read here
        result = await oracle.run("docs", "Hello there")
        return result.status
    finally:
        await oracle.close()


@pytest.mark.parametrize("block", PACKAGE_FILES, ids=[b.id for b in PACKAGE_FILES])
def test_a_pyproject_block_parses_and_names_its_plugins(block: Block) -> None:
    data = tomllib.loads(block.text)

    plugins = data["project"]["entry-points"]["oracle.plugins"]
    assert plugins and all(value.startswith("oracle_plugin_") for value in plugins.values())


@pytest.mark.parametrize("block", ORACLE_TOMLS, ids=[b.id for b in ORACLE_TOMLS])
def test_an_oracle_toml_block_is_read_without_a_word_and_runs_a_turn(
    block: Block, tmp_path: Path, site: SitePackages, caplog: pytest.LogCaptureFixture
) -> None:
    for name in EXAMPLE_PLUGINS:
        site.add(f"oracle-plugin-{name}", plugin_code(name), module=f"docs_example_{name}")
    env = written(block, tmp_path / "home")
    data: dict[str, Any] = tomllib.loads(block.text)
    caplog.set_level(logging.WARNING, logger="oracle_core")

    settings = Settings.from_env(env)
    read_every_table(settings)
    servers, errors = servers_from_config(settings.mcp_config(), env)
    if "mcp" not in data:
        oracle = Oracle(settings=settings, path=[str(site.root), *sys.path])
        failures = [f"{f.plugin}: {f}" for f in oracle.registry.failures]
        status = asyncio.run(one_turn(oracle))
        assert failures == []
        assert status == "completed"

    assert errors == []
    assert len(servers) == len(data.get("mcp", {}))
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
