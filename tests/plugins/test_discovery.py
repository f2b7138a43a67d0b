"""Plugins are found through real entry points of installed distributions."""

from __future__ import annotations

import pytest
from support import SitePackages, plugin_code

from oracle_core import PluginLoadError, StrictPluginError


def test_discovers_every_installed_plugin_with_its_distribution_and_version(
    site: SitePackages,
) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"), version="1.2.3")
    site.add("oracle-plugin-beta", plugin_code("beta", tools=("b1", "b2")), version="0.4.0")

    registry = site.oracle().registry

    assert list(registry.plugins) == ["alpha", "beta"]
    beta = registry.plugins["beta"]
    assert beta.source.distribution == "oracle-plugin-beta"
    assert beta.manifest.version == "0.4.0"
    assert [t.name for t in beta.tools] == ["b1", "b2"]
    assert registry.tools["b2"].plugin is beta
    assert registry.failures == []


def test_manifest_version_wins_over_the_distribution_version(site: SitePackages) -> None:
    site.add("oracle-plugin-v", plugin_code("v", extra_manifest='version="9.9"'), version="1.0")

    assert site.oracle().registry.plugins["v"].manifest.version == "9.9"


def test_a_plugin_that_fails_to_import_is_reported_and_the_others_load(
    site: SitePackages,
) -> None:
    site.add("oracle-plugin-good", plugin_code("good"))
    site.add("oracle-plugin-broken", "import module_that_is_not_installed\n")

    registry = site.oracle().registry

    assert list(registry.plugins) == ["good"]
    [failure] = registry.failures
    assert isinstance(failure, PluginLoadError)
    assert failure.plugin == "oracle_plugin_broken"
    assert failure.distribution == "oracle-plugin-broken"
    assert "ModuleNotFoundError" in str(failure)
    assert "module_that_is_not_installed" in str(failure)


def test_a_hook_that_raises_leaves_its_plugin_out(site: SitePackages) -> None:
    code = (
        plugin_code("flaky")
        + "\n\n@hookimpl\ndef oracle_middleware():\n    raise RuntimeError('boom')\n"
    )
    site.add("oracle-plugin-flaky", code)
    site.add("oracle-plugin-good", plugin_code("good"))

    registry = site.oracle().registry

    assert list(registry.plugins) == ["good"]
    assert "hook oracle_middleware raised RuntimeError: boom" in str(registry.failures[0])
    assert registry.failures[0].plugin == "flaky"


def test_strict_mode_makes_any_failure_fatal_and_names_the_plugin(site: SitePackages) -> None:
    site.add("oracle-plugin-good", plugin_code("good"))
    site.add("oracle-plugin-broken", "raise ImportError('no luck')\n")

    with pytest.raises(StrictPluginError) as caught:
        site.oracle(ORACLE_STRICT_PLUGINS="1")

    assert "oracle_plugin_broken" in str(caught.value)
    assert "no luck" in str(caught.value)


def test_load_plugins_selects_by_entry_point_or_distribution_name(site: SitePackages) -> None:
    for name in ("alpha", "beta", "gamma"):
        site.add(f"oracle-plugin-{name}", plugin_code(name, tools=(name,)), entry_point=name)

    registry = site.oracle(ORACLE_LOAD_PLUGINS="alpha, oracle-plugin-gamma").registry

    assert list(registry.plugins) == ["alpha", "gamma"]


def test_empty_load_plugins_loads_none_and_never_imports_them(site: SitePackages) -> None:
    site.add("oracle-plugin-broken", "raise ImportError('imported')\n")

    registry = site.oracle(ORACLE_LOAD_PLUGINS="").registry

    assert len(registry) == 0
    assert registry.failures == []


def test_load_plugins_naming_an_absent_plugin_is_reported(site: SitePackages) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"), entry_point="alpha")

    registry = site.oracle(ORACLE_LOAD_PLUGINS="alpha,wether").registry

    assert list(registry.plugins) == ["alpha"]
    assert [f.plugin for f in registry.failures] == ["wether"]
    assert "ORACLE_LOAD_PLUGINS names 'wether'" in str(registry.failures[0])


def test_disable_plugins_leaves_a_plugin_out_without_importing_it(site: SitePackages) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"), entry_point="alpha")
    site.add("oracle-plugin-broken", "raise ImportError('imported')\n", entry_point="broken")

    registry = site.oracle(ORACLE_DISABLE_PLUGINS="broken").registry

    assert list(registry.plugins) == ["alpha"]
    assert registry.failures == []


def test_plugins_given_in_code_need_no_distribution(site: SitePackages) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"))
    import oracle_plugin_alpha  # type: ignore[import-not-found]

    from oracle_core import Oracle

    registry = Oracle([oracle_plugin_alpha], entry_points=False, settings=site.settings()).registry

    assert list(registry.plugins) == ["alpha"]
    assert registry.plugins["alpha"].source.distribution is None


def test_an_unknown_hook_name_is_reported_with_a_suggestion(site: SitePackages) -> None:
    code = plugin_code("typo") + "\n\n@hookimpl\ndef oracle_tool():\n    return []\n"
    site.add("oracle-plugin-typo", code)

    [failure] = site.oracle().registry.failures

    assert "unknown hook 'oracle_tool'" in str(failure)
    assert "did you mean 'oracle_tools'" in str(failure)


def test_entry_points_are_read_from_the_file_as_importlib_metadata_reads_them() -> None:
    """Seeded: entry_points.txt files of every shape give the group's entry points exactly."""
    import random
    from importlib import metadata

    from oracle_core.plugins.discovery import ENTRY_POINT_GROUP, group_entry_points

    rng = random.Random(7)
    sections = [ENTRY_POINT_GROUP, "console_scripts", "pytest11", "oracle.plugins.extra"]
    lines = ["", "   ", "# a comment", "  # indented comment"]
    for round_ in range(300):
        text_lines: list[str] = []
        for _ in range(rng.randint(0, 4)):
            section = rng.choice(sections)
            text_lines.append(rng.choice([f"[{section}]", f"  [{section}]  ", f"[ {section} ]"]))
            for index in range(rng.randint(0, 4)):
                name = rng.choice([f"p{index}", f" spaced {index} ", "a.b-c_d"])
                value = rng.choice(["mod", "pkg.mod:obj", " pkg.mod : obj [extra] ", "x=y"])
                text_lines.append(rng.choice([f"{name}={value}", f"{name} = {value}"]))
                if rng.random() < 0.3:
                    text_lines.append(rng.choice(lines))
        text = "\n".join(text_lines)
        expected = [
            (ep.name, ep.value, ep.group)
            for ep in metadata.EntryPoints._from_text(text)  # type: ignore[attr-defined]
            if ep.group == ENTRY_POINT_GROUP
        ]
        found = [
            (ep.name, ep.value, ep.group) for ep in group_entry_points(text, ENTRY_POINT_GROUP)
        ]
        assert found == expected, (round_, text)


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("wether", "weather"),
        ("Weathr", "weather"),
        ("oracle-plugin-weathe", "oracle-plugin-weather"),
        ("clok", "clock"),
    ],
)
def test_a_misspelt_plugin_to_load_names_the_nearest(
    site: SitePackages, typo: str, meant: str
) -> None:
    for name in ("weather", "clock"):
        site.add(f"oracle-plugin-{name}", plugin_code(name), entry_point=name)

    registry = site.oracle(ORACLE_LOAD_PLUGINS=f"clock,{typo}").registry

    [failure] = registry.failures
    assert f"ORACLE_LOAD_PLUGINS names {typo!r}" in str(failure)
    assert f"(did you mean {meant!r}?)" in str(failure)


def test_a_name_to_load_near_nothing_suggests_nothing(site: SitePackages) -> None:
    site.add("oracle-plugin-weather", plugin_code("weather"), entry_point="weather")

    [failure] = site.oracle(ORACLE_LOAD_PLUGINS="zzqx").registry.failures

    assert "did you mean" not in str(failure)


def test_a_misspelt_plugin_to_disable_is_a_warning_with_the_nearest(
    site: SitePackages, caplog: pytest.LogCaptureFixture
) -> None:
    site.add("oracle-plugin-weather", plugin_code("weather"), entry_point="weather")
    site.add("oracle-plugin-clock", plugin_code("clock"), entry_point="clock")

    with caplog.at_level("WARNING", logger="oracle_core"):
        registry = site.oracle(ORACLE_DISABLE_PLUGINS="wether,clock").registry

    assert list(registry.plugins) == ["weather"]  # the typo disabled nothing
    warnings = [
        r.getMessage() for r in caplog.records if "ORACLE_DISABLE_PLUGINS" in r.getMessage()
    ]
    assert warnings == [
        "ORACLE_DISABLE_PLUGINS names 'wether', but no installed plugin, distribution or MCP "
        "server has that name (did you mean 'weather'?), so it disables nothing: check the "
        "spelling (oracle plugins lists the names)"
    ]


def test_disabling_an_mcp_server_by_name_is_no_typo(
    site: SitePackages, caplog: pytest.LogCaptureFixture
) -> None:
    home = site.root / "home"
    home.mkdir()
    (home / "oracle.toml").write_text('[mcp.files]\ncommand = "nosuch-mcp-server"\n')

    with caplog.at_level("WARNING", logger="oracle_core"):
        site.oracle(ORACLE_DISABLE_PLUGINS="files")

    assert not [r for r in caplog.records if "ORACLE_DISABLE_PLUGINS" in r.getMessage()]
