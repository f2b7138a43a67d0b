"""Operator settings: oracle.toml per-plugin config, `$env` secrets, env overrides, tracing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import SitePackages, plugin_code

from oracle_core import Oracle, PluginManifest, Settings, Tool, ToolContext, hookimpl, tool


def settings_with(tmp_path: Path, toml: str, **env: str) -> Settings:
    (tmp_path / "oracle.toml").write_text(toml)
    return Settings.from_env({"ORACLE_HOME": str(tmp_path), **env})


def test_plugin_config_comes_from_its_oracle_toml_section(tmp_path: Path) -> None:
    settings = settings_with(tmp_path, '[plugins.weather]\ntimeout = 5\nunits = "metric"\n')

    assert settings.plugin_config("weather") == {"timeout": 5, "units": "metric"}
    assert settings.plugin_config("other") == {}


def test_env_indirection_keeps_secrets_out_of_the_file(tmp_path: Path) -> None:
    settings = settings_with(
        tmp_path, '[plugins.search]\napi_key = { "$env" = "SEARCH_KEY" }\n', SEARCH_KEY="s3cret"
    )

    assert settings.plugin_config("search") == {"api_key": "s3cret"}


def test_environment_overrides_a_key_without_colliding_between_plugins(tmp_path: Path) -> None:
    settings = settings_with(
        tmp_path,
        "[plugins.web]\nurl = 'a'\n",
        ORACLE_PLUGIN_WEB__URL="b",
        ORACLE_PLUGIN_WEB_SEARCH__URL="c",
    )

    assert settings.plugin_config("web") == {"url": "b"}
    assert settings.plugin_config("web-search") == {"url": "c"}


class UnitsPlugin:
    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(
            name="weather", summary="Units.", when_to_use=["units"], visibility="always"
        )

    @hookimpl
    def oracle_tools(self) -> list[Tool]:
        @tool
        def units(ctx: ToolContext) -> str:
            """The configured units."""
            return str(ctx.config["units"])

        return [units]


async def test_a_tool_receives_its_plugins_config(tmp_path: Path) -> None:
    from oracle_core.testing import call_tool

    settings = settings_with(
        tmp_path, "[plugins.weather]\nunits = 'metric'\n", ORACLE_PLUGIN_WEATHER__UNITS="imperial"
    )
    oracle = Oracle([UnitsPlugin()], entry_points=False, settings=settings)

    assert await call_tool(oracle, "units", {}) == "imperial"
    await oracle.close()


def test_invalid_toml_is_reported_with_the_file(tmp_path: Path) -> None:
    settings = settings_with(tmp_path, "[plugins.weather\n")

    with pytest.raises(ValueError, match=r"oracle\.toml, line 1, column 17: not valid TOML"):
        settings.plugin_config("weather")


def test_trace_plugins_prints_every_hook_call(
    site: SitePackages, capsys: pytest.CaptureFixture[str]
) -> None:
    site.add("oracle-plugin-alpha", plugin_code("alpha"), entry_point="alpha")

    site.oracle(ORACLE_TRACE_PLUGINS="1")

    trace = capsys.readouterr().err.splitlines()
    assert "oracle: hook oracle_manifest -> alpha" in trace
    assert "oracle: hook oracle_tools -> alpha" in trace


def test_run_limits_come_from_the_environment() -> None:
    settings = Settings.from_env({"ORACLE_MAX_RESULT_BYTES": "1000", "ORACLE_RUN_TIMEOUT": "5"})

    oracle = Oracle(entry_points=False, settings=settings, max_steps=3)

    assert (oracle.limits.max_result_bytes, oracle.limits.run_timeout) == (1000, 5.0)
    assert oracle.limits.max_steps == 3  # what the code passes wins


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("ORACLE_RUN_TIMEOUT", "soon", "ORACLE_RUN_TIMEOUT='soon' in the environment is not valid: expected a number of seconds, above 0"),
        ("ORACLE_MAX_STEPS", "2.5", "ORACLE_MAX_STEPS='2.5' in the environment is not valid: expected a whole number of model calls, at least 1"),
        ("ORACLE_MAX_STEPS", "0", "ORACLE_MAX_STEPS='0' in the environment is not valid: expected a whole number of model calls, at least 1"),
        ("ORACLE_TOOL_TIMEOUT", "-1", "ORACLE_TOOL_TIMEOUT='-1' in the environment is not valid: expected a number of seconds, above 0"),
    ],
)  # fmt: skip
def test_a_bad_run_limit_names_the_variable_and_what_it_takes(
    variable: str, value: str, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Settings.from_env({variable: value})
