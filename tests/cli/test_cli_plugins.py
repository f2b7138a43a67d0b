"""``oracle plugins`` run as a subprocess against real distributions on the path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import SitePackages, plugin_code

pytestmark = pytest.mark.slow  # runs subprocesses: `pytest -m 'not slow'` skips it

ORACLE = [sys.executable, "-m", "oracle_core"]


def run_oracle(site: SitePackages, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        **os.environ,
        "PYTHONPATH": str(site.root),
        "ORACLE_HOME": str(site.root / "home"),
        # Only the test's distributions: the ones this venv installs are not the subject here.
        "ORACLE_LOAD_PLUGINS": env.pop("ORACLE_LOAD_PLUGINS", "alpha,beta,broken"),
        **env,
    }
    return subprocess.run(
        [*ORACLE, *args], env=environ, capture_output=True, text=True, timeout=60, check=False
    )


def install_sample(site: SitePackages) -> None:
    site.add(
        "oracle-plugin-alpha",
        plugin_code("alpha", tools=("a1", "a2")),
        entry_point="alpha",
        version="1.0.0",
    )
    site.add(
        "oracle-plugin-beta",
        plugin_code("beta", visibility="always"),
        entry_point="beta",
        version="2.1.0",
    )
    site.add("oracle-plugin-broken", "raise RuntimeError('cannot start')\n", entry_point="broken")


def test_plugins_prints_a_table_and_the_failures(site: SitePackages) -> None:
    install_sample(site)

    result = run_oracle(site, "plugins")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["PLUGIN", "DISTRIBUTION", "VERSION", "TIER", "TOOLS", "ROUTES"]
    assert lines[1].split() == [
        "alpha", "oracle-plugin-alpha", "1.0.0", "on-demand", "a1,", "a2", "-",
    ]  # fmt: skip
    assert lines[2].split() == ["beta", "oracle-plugin-beta", "2.1.0", "always", "beta_ping", "-"]
    assert "Failed to load (1):" in result.stdout
    broken = site.root / "oracle_plugin_broken.py"
    assert (
        f"broken [oracle-plugin-broken]: import of 'oracle_plugin_broken' failed at {broken}, "
        "line 1: RuntimeError: cannot start" in result.stdout
    )


def test_plugins_json_parses_and_lists_plugins_and_failures(site: SitePackages) -> None:
    install_sample(site)

    result = run_oracle(site, "plugins", "--json")

    report = json.loads(result.stdout)
    assert [p["name"] for p in report["plugins"]] == ["alpha", "beta"]
    assert report["plugins"][0]["tools"] == [
        {"name": "a1", "visibility": "on-demand"},
        {"name": "a2", "visibility": "on-demand"},
    ]
    assert report["failures"][0]["plugin"] == "broken"
    assert report["failures"][0]["error"] == "PluginLoadError"


def test_strict_mode_exits_non_zero_naming_the_plugin(site: SitePackages) -> None:
    install_sample(site)

    result = run_oracle(site, "plugins", ORACLE_STRICT_PLUGINS="1")

    assert result.returncode == 1
    assert "broken: import of 'oracle_plugin_broken' failed" in result.stderr


def test_plugins_with_nothing_installed_says_how_to_get_some(site: SitePackages) -> None:
    result = run_oracle(site, "plugins", ORACLE_LOAD_PLUGINS="")

    assert result.returncode == 0
    assert "No plugins installed" in result.stdout


def test_plugins_does_not_import_litellm(site: SitePackages, tmp_path: Path) -> None:
    install_sample(site)
    probe = (
        "import sys\nfrom oracle_core.cli import main\n"
        "try:\n    main(['plugins'])\nexcept SystemExit:\n    pass\n"
        "print('litellm' in sys.modules, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(site.root), "ORACLE_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.stderr.strip().endswith("False"), result.stderr


OPAQUE_PLUGIN = '''
from oracle_core import PluginManifest, hookimpl, tool


class Coordinates:
    """A plain class: pydantic has no schema for it."""


@tool
def locate(where: Coordinates) -> str:
    """Find what is at a place."""
    return ""


@tool
def greet(name: str) -> str:
    """Say hello."""
    return name


@hookimpl
def oracle_manifest():
    return PluginManifest(name="opaque", summary="Places.", when_to_use=["the user asks where"])


@hookimpl
def oracle_tools():
    return [locate, greet]
'''


def test_plugins_reports_a_tool_whose_schema_cannot_be_built(site: SitePackages) -> None:
    site.add("oracle-plugin-opaque", OPAQUE_PLUGIN, entry_point="opaque")

    first = run_oracle(site, "plugins", ORACLE_LOAD_PLUGINS="opaque")
    again = run_oracle(site, "plugins", ORACLE_LOAD_PLUGINS="opaque")  # a failure is not cached

    for result in (first, again):
        assert result.returncode == 0, result.stderr
        assert "Failed to load (1):" in result.stdout
        assert (
            "opaque [oracle-plugin-opaque]: tool 'locate' (oracle_plugin_opaque.locate): "
            "parameter 'where' has type oracle_plugin_opaque.Coordinates, which pydantic "
            "cannot turn into a JSON schema"
        ) in result.stdout
        assert "use str, int, float, bool, a list or dict of them" in result.stdout


def test_plugins_says_what_would_make_a_plugin_easier_to_find(site: SitePackages) -> None:
    install_sample(site)  # alpha's summary only repeats its name; it gives no examples
    site.add(
        "oracle-plugin-gamma",
        plugin_code(
            "gamma",
            extra_manifest="title='Gamma', examples=[Example(user='ping me', tool='gamma_ping',"
            " args={'text': 'me'})],",
        )
        .replace('summary="The gamma plugin."', 'summary="Answers pings with the text sent."')
        .replace("import hookimpl,", "import Example, hookimpl,"),
        entry_point="gamma",
    )

    text = run_oracle(site, "plugins", ORACLE_LOAD_PLUGINS="alpha,gamma").stdout
    report = json.loads(
        run_oracle(site, "plugins", "--json", ORACLE_LOAD_PLUGINS="alpha,gamma").stdout
    )

    assert "Hard to find (2; see `oracle search --explain`):" in text
    assert "  alpha: summary only repeats the plugin's name;" in text
    assert "  alpha: examples is empty; add an example request" in text
    assert {(h["plugin"], h["field"]) for h in report["hints"]} == {
        ("alpha", "summary"),
        ("alpha", "examples"),
    }
    assert [w for w in report["warnings"] if w["plugin"] == "gamma"] == []
