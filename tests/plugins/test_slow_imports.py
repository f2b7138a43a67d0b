"""Slow plugin imports are timed, warned about at start and listed by ``oracle plugins``.

An import cannot be made slow on cue without sleeping, so the threshold moves instead:
``ORACLE_SLOW_IMPORT_SECONDS=0`` makes any real import slow, a large one none.
"""

from __future__ import annotations

import json
import logging

import pytest
from click.testing import CliRunner
from support import SitePackages, ToolsPlugin, plugin_code

from oracle_core import Oracle, Settings
from oracle_core.cli import main
from oracle_core.errors import ConfigError
from oracle_core.plugins.loader import import_times

EVERY_IMPORT_IS_SLOW = {"ORACLE_SLOW_IMPORT_SECONDS": "0"}
NO_IMPORT_IS_SLOW = {"ORACLE_SLOW_IMPORT_SECONDS": "1000"}


def install(site: SitePackages) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"), entry_point="alpha")
    site.add("oracle-plugin-broken", "raise RuntimeError('cannot start')\n", entry_point="broken")


def warned_at_start(site: SitePackages, caplog: pytest.LogCaptureFixture, **env: str) -> list[str]:
    """Start an oracle over ``site``'s plugins; the slow-import warnings it logged."""
    with caplog.at_level(logging.WARNING, logger="oracle_core.plugins"):
        site.oracle(**env)
    return slow_import_lines(caplog)


def slow_import_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "oracle_core.plugins" and "to import" in r.getMessage()
    ]


def oracle_plugins(site: SitePackages, *args: str, **env: str) -> tuple[str, str]:
    environ = {
        "ORACLE_HOME": str(site.root / "home"),
        "ORACLE_LOAD_PLUGINS": "alpha,broken",  # only this test's distributions
        **env,
    }
    result = CliRunner().invoke(main, ["plugins", *args], env=environ)
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def test_an_import_over_the_threshold_is_warned_at_start_in_one_line_naming_the_plugin(
    site: SitePackages, caplog: pytest.LogCaptureFixture
) -> None:
    install(site)

    [alpha, broken] = warned_at_start(site, caplog, **EVERY_IMPORT_IS_SLOW)

    assert alpha.startswith("plugin alpha [oracle-plugin-alpha] took ")
    assert " s to import, over ORACLE_SLOW_IMPORT_SECONDS=0: every start waits for it" in alpha
    assert "\n" not in alpha
    assert broken.startswith("plugin broken [oracle-plugin-broken] took ")  # failed, still paid


def test_an_import_under_the_threshold_is_not_warned_about(
    site: SitePackages, caplog: pytest.LogCaptureFixture
) -> None:
    install(site)

    assert warned_at_start(site, caplog, **NO_IMPORT_IS_SLOW) == []


def test_every_imported_plugin_is_timed_and_a_plugin_given_in_code_is_not(
    site: SitePackages, caplog: pytest.LogCaptureFixture
) -> None:
    install(site)

    with import_times() as times, caplog.at_level(logging.WARNING, "oracle_core.plugins"):
        Oracle([ToolsPlugin(name="kit")], settings=site.settings(**EVERY_IMPORT_IS_SLOW),
               path=[str(site.root)])  # fmt: skip

    assert sorted(times) == ["alpha", "broken"]
    assert all(seconds > 0 for seconds in times.values())
    assert not any("kit" in line for line in slow_import_lines(caplog))


def test_oracle_plugins_lists_the_slow_imports(site: SitePackages) -> None:
    install(site)

    out, _ = oracle_plugins(site, **EVERY_IMPORT_IS_SLOW)

    header = "\nSlow imports (2; over 0 s, ORACLE_SLOW_IMPORT_SECONDS; every start waits):\n"
    assert header in out
    listed = out.split(header)[1].splitlines()[:2]
    assert {line.split(": ")[0] for line in listed} == {"  alpha", "  broken"}
    assert all(line.endswith(" s") for line in listed)


def test_oracle_plugins_json_has_each_plugins_import_time_and_the_slow_ones(
    site: SitePackages,
) -> None:
    install(site)

    slow = json.loads(oracle_plugins(site, "--json", **EVERY_IMPORT_IS_SLOW)[0])
    quick = json.loads(oracle_plugins(site, "--json", **NO_IMPORT_IS_SLOW)[0])

    [alpha] = slow["plugins"]
    assert isinstance(alpha["import_seconds"], float)
    assert {s["plugin"] for s in slow["slow_imports"]} == {"alpha", "broken"}
    assert slow["slow_import_seconds"] == 0
    assert quick["slow_imports"] == [] and quick["slow_import_seconds"] == 1000


def test_oracle_plugins_says_nothing_of_imports_under_the_threshold(site: SitePackages) -> None:
    install(site)

    out, _ = oracle_plugins(site, **NO_IMPORT_IS_SLOW)

    assert "Slow imports" not in out


@pytest.mark.parametrize("value", ["-1", "soon"])
def test_a_bad_threshold_names_the_variable(value: str) -> None:
    with pytest.raises(ConfigError, match=r"ORACLE_SLOW_IMPORT_SECONDS=.* a number of seconds"):
        Settings.from_env({"ORACLE_SLOW_IMPORT_SECONDS": value})
