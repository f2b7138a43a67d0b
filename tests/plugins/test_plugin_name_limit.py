"""A plugin name has a length limit, the same for a manifest and an MCP server's name.

A name longer than ``NAME_MAX`` is an error naming the plugin (as far as it can: the entry
point, or the name's start), the field and the fix, and never repeats the whole name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support import SitePackages

from oracle_core import ManifestError, MCPServer, Oracle, PluginConfigError, Settings
from oracle_core.authoring.manifest import NAME_MAX, PluginManifest
from oracle_core.plugins.mcp.config import server_from_table

LONG = "a" * 100_000


def _manifest_plugin(name: str) -> str:
    return (
        "from oracle_core import hookimpl, PluginManifest\n"
        "@hookimpl\ndef oracle_manifest():\n"
        f"    return PluginManifest(name={name!r}, summary='s', when_to_use=['w'])\n"
    )


@pytest.mark.parametrize("length", [NAME_MAX + 1, 1_000, len(LONG)])
def test_a_manifest_name_over_the_limit_is_refused_naming_the_plugin_field_and_fix(
    site: SitePackages, length: int
) -> None:
    site.add("oracle-plugin-long", _manifest_plugin("a" * length))

    registry = site.oracle().registry

    (failure,) = registry.failures
    assert isinstance(failure, ManifestError)
    assert failure.plugin == "oracle_plugin_long"
    assert failure.field == "name"
    assert f"is {length} characters" in str(failure)
    assert f"within {NAME_MAX}" in str(failure)
    assert len(str(failure)) < 400  # the name is shown by its start, never whole
    assert not registry.plugins


def test_a_name_of_exactly_the_limit_loads(site: SitePackages) -> None:
    site.add("oracle-plugin-long", _manifest_plugin("a" * NAME_MAX))

    assert list(site.oracle().registry.plugins) == ["a" * NAME_MAX]


def test_a_long_name_that_is_also_badly_formed_is_shown_by_its_start() -> None:
    with pytest.raises(ValueError) as error:
        PluginManifest(name="A" * 100_000, summary="s", when_to_use=["w"])

    assert len(str(error.value)) < 1_000


def test_a_long_mcp_table_name_is_refused_with_the_limit() -> None:
    with pytest.raises(PluginConfigError) as error:
        server_from_table("m" * (NAME_MAX + 1), {"command": "x"}, {})

    assert error.value.key == "name"
    assert f"within {NAME_MAX}" in str(error.value)
    assert "[mcp.mmm" in str(error.value)


def test_a_long_mcp_table_in_oracle_toml_is_reported_and_the_oracle_still_builds(
    tmp_path: Path,
) -> None:
    (tmp_path / "oracle.toml").write_text(f'[mcp.{"m" * 200}]\ncommand = "x"\n')

    oracle = Oracle(entry_points=False, settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)}))

    (failure,) = oracle.registry.failures
    assert isinstance(failure, PluginConfigError)
    assert failure.key == "name"
    assert f"within {NAME_MAX}" in str(failure)
    assert len(str(failure)) < 400


def test_a_long_mcp_server_name_in_code_is_refused_by_the_same_rule() -> None:
    with pytest.raises(PluginConfigError) as error:
        MCPServer("m" * (NAME_MAX + 1), command="x")

    assert error.value.key == "name"
