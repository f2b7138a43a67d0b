"""Typed plugin config: ``PluginManifest(config=Model)`` validated at assembly, secrets from ``$env``."""

from __future__ import annotations

import json
import os
import random
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from oracle_core import (
    PluginConfigError,
    PluginManifest,
    Settings,
    Tool,
    ToolContext,
    hookimpl,
    tool,
)
from oracle_core.authoring.host import PluginHost, PluginStates
from oracle_core.plugins.config import load_plugin_config
from oracle_core.plugins.loader import Candidate, assemble, new_plugin_manager, source_for_object
from oracle_core.plugins.registry import Registry
from oracle_core.testing import OracleFactory, call_tool, check_plugin
from oracle_core.testing.harness import write_config


class GithubConfig(BaseModel):
    """What the test plugin can be told."""

    model_config = ConfigDict(frozen=True)

    token: SecretStr
    org: str = "acme"
    per_page: int = Field(default=30, ge=1, le=100)
    verbose: bool = False
    labels: list[str] = []
    timeout: float = 5.0


class GithubPlugin:
    """A plugin with a config model; its tool reports the typed values it was given."""

    def __init__(self) -> None:
        self.hook_config: Any = None

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(
            name="github",
            summary="Issues and pull requests.",
            when_to_use=["the user asks about issues"],
            config=GithubConfig,
        )

    @hookimpl
    def oracle_tools(self, config: Any) -> list[Tool]:
        self.hook_config = config

        @tool
        def github_settings(*, ctx: ToolContext) -> str:
            """Report the settings the tool was given."""
            config: GithubConfig = ctx.config
            return json.dumps(
                {
                    "type": type(config).__name__,
                    "token": config.token.get_secret_value(),
                    "org": config.org,
                    "per_page": config.per_page,
                    "verbose": config.verbose,
                    "labels": config.labels,
                }
            )

        return [github_settings]


def assemble_with(
    tmp_path: Path, plugin: Any, config: dict[str, Any] | None = None, **env: str
) -> Registry:
    """Assemble ``plugin`` alone, as an oracle would, with ``config`` as its oracle.toml table."""
    if config is not None:
        write_config(tmp_path, {"github": config})
    settings = Settings.from_env({"ORACLE_HOME": str(tmp_path), **env})
    return assemble(
        [Candidate(source_for_object(plugin), plugin)],
        manager=new_plugin_manager(),
        host=PluginHost(settings, PluginStates()),
        cache=False,
    )


def failure_of(registry: Registry) -> PluginConfigError:
    assert "github" not in registry.plugins
    [failure] = registry.failures
    assert isinstance(failure, PluginConfigError)
    assert failure.plugin == "github"
    return failure


# -- values reach hooks and tools typed --------------------------------------------------------


async def test_a_tool_gets_its_config_as_the_declared_model(
    oracle_factory: OracleFactory,
) -> None:
    oracle = oracle_factory(
        GithubPlugin(),
        config={"github": {"token": "$GITHUB_TOKEN", "labels": ["bug"], "per_page": 50}},
        env={"GITHUB_TOKEN": "ghp_secret", "ORACLE_PLUGIN_GITHUB__VERBOSE": "true"},
    )

    result = json.loads(await call_tool(oracle, "github_settings", {}))

    assert result == {
        "type": "GithubConfig",
        "token": "ghp_secret",
        "org": "acme",
        "per_page": 50,
        "verbose": True,
        "labels": ["bug"],
    }


def test_hooks_get_the_same_instance_the_tools_get(tmp_path: Path) -> None:
    plugin = GithubPlugin()

    registry = assemble_with(tmp_path, plugin, {"token": {"$env": "GH"}}, GH="t0ken")

    assert isinstance(plugin.hook_config, GithubConfig)
    assert registry.plugins["github"].config is plugin.hook_config
    assert plugin.hook_config.token.get_secret_value() == "t0ken"


def test_environment_values_are_converted_by_the_model(tmp_path: Path) -> None:
    registry = assemble_with(
        tmp_path,
        GithubPlugin(),
        {"token": "x"},
        ORACLE_PLUGIN_GITHUB__PER_PAGE="7",
        ORACLE_PLUGIN_GITHUB__TIMEOUT="2.5",
        ORACLE_PLUGIN_GITHUB__LABELS='["bug", "docs"]',
    )

    config = registry.plugins["github"].config
    assert (config.per_page, config.timeout, config.labels) == (7, 2.5, ["bug", "docs"])


def test_a_double_dollar_writes_a_literal_dollar(tmp_path: Path) -> None:
    registry = assemble_with(tmp_path, GithubPlugin(), {"token": "$$notavariable"})

    assert registry.plugins["github"].config.token.get_secret_value() == "$notavariable"


def test_a_plugin_without_a_model_gets_a_dict_with_secrets_resolved(tmp_path: Path) -> None:
    values = load_plugin_config(
        "plain",
        None,
        {"token": "$TOKEN", "nested": {"key": {"$env": "KEY"}}},
        {"TOKEN": "a", "KEY": "b"},
    )

    assert values == {"token": "a", "nested": {"key": "b"}}


# -- what is wrong is named -------------------------------------------------------------------


def test_an_unknown_key_is_named_with_the_closest_setting(tmp_path: Path) -> None:
    failure = failure_of(assemble_with(tmp_path, GithubPlugin(), {"token": "x", "per_pag": 5}))

    assert failure.key == "per_pag"
    assert str(failure) == (
        "[plugins.github] per_pag is not a setting of plugin 'github' (did you mean "
        "'per_page'?); its settings are: labels, org, per_page, timeout, token, verbose. "
        "Remove it or fix its name"
    )


def test_a_bad_environment_value_names_the_variable(tmp_path: Path) -> None:
    failure = failure_of(
        assemble_with(
            tmp_path, GithubPlugin(), {"token": "x"}, ORACLE_PLUGIN_GITHUB__PER_PAGE="many"
        )
    )

    assert str(failure).startswith("ORACLE_PLUGIN_GITHUB__PER_PAGE = 'many': Input should be")


def test_a_missing_required_key_says_where_to_set_it(tmp_path: Path) -> None:
    failure = failure_of(assemble_with(tmp_path, GithubPlugin(), {}))

    assert str(failure) == (
        "[plugins.github] token is required: set it in oracle.toml or as "
        "ORACLE_PLUGIN_GITHUB__TOKEN"
    )


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    failure = failure_of(
        assemble_with(
            tmp_path, GithubPlugin(), {"token": "x", "per_page": 0, "org": 3, "labels": "bug"}
        )
    )

    assert failure.problems == [
        "[plugins.github] org = 3: Input should be a valid string",
        "[plugins.github] per_page = 0: Input should be greater than or equal to 1",
        "[plugins.github] labels = 'bug': Input should be a valid list",
    ]


def test_an_unset_variable_names_plugin_key_and_variable(tmp_path: Path) -> None:
    failure = failure_of(assemble_with(tmp_path, GithubPlugin(), {"token": "$GITHUB_TOKEN"}))

    assert str(failure) == (
        "[plugins.github] token refers to the environment variable GITHUB_TOKEN, which is not "
        "set: set GITHUB_TOKEN, or change token in oracle.toml"
    )


@pytest.mark.parametrize("seed", range(12))
def test_a_key_the_plugin_does_not_read_is_named_so_even_when_its_variable_is_unset(
    tmp_path: Path, seed: int
) -> None:
    # plugin-authors.md's `api_key = "$WEATHER_API_KEY"` copied under the shipped weather
    # plugin: the error asked to set WEATHER_API_KEY, and then named the key unknown.
    rng = random.Random(seed)
    unknown = rng.choice(["api_key", "apikey", "key", "secret", "tokn"]) + "_" * rng.randrange(2)
    variable = "UNSET_" + "".join(rng.choices(string.ascii_uppercase, k=8))
    reference = rng.choice([f"${variable}", {"$env": variable}])
    config = {"token": "t", unknown: reference}

    failure = failure_of(assemble_with(tmp_path, GithubPlugin(), config))

    assert failure.problems == [
        f"[plugins.github] {unknown} is not a setting of plugin 'github'"
        + (" (did you mean 'token'?)" if unknown.startswith("tokn") else "")
        + "; its settings are: labels, org, per_page, timeout, token, verbose. Remove it or "
        "fix its name"
    ]
    assert variable not in str(failure)


def test_an_unset_variable_fails_a_plugin_without_a_model_too() -> None:
    with pytest.raises(PluginConfigError, match=r"\[plugins.plain\] key refers to .* KEY"):
        load_plugin_config("plain", None, {"key": {"$env": "KEY"}}, {})


def test_a_secret_is_never_shown_even_when_it_is_the_bad_value(tmp_path: Path) -> None:
    class Strict(GithubPlugin):
        @hookimpl
        def oracle_manifest(self) -> PluginManifest:
            class Numeric(BaseModel):
                token: int

            return PluginManifest(name="github", summary="x", when_to_use=["x"], config=Numeric)

    failure = failure_of(assemble_with(tmp_path, Strict(), {"token": "$TOKEN"}, TOKEN="ghp_leak"))

    assert "ghp_leak" not in repr(failure.problems)
    assert "[plugins.github] token (set from the environment; the value is not shown)" in str(
        failure
    )


def test_a_config_that_is_not_a_pydantic_model_is_a_manifest_error(tmp_path: Path) -> None:
    class NotAModel(GithubPlugin):
        @hookimpl
        def oracle_manifest(self) -> PluginManifest:
            return {"name": "github", "summary": "x", "when_to_use": ["x"], "config": dict}  # type: ignore[return-value]

    registry = assemble_with(tmp_path, NotAModel(), {"token": "x"})

    [failure] = registry.failures
    assert "manifest field 'config'" in str(failure)


def test_the_model_class_never_reaches_the_model_or_the_listing(
    oracle_factory: OracleFactory,
) -> None:
    oracle = oracle_factory(GithubPlugin(), config={"github": {"token": "x"}})

    manifest = oracle.registry.plugins["github"].manifest
    assert manifest.config is GithubConfig
    assert "config" not in manifest.model_dump(mode="json")


def test_check_plugin_reports_config_problems_naming_the_key() -> None:
    with pytest.raises(AssertionError, match=r"\[plugins.github\] per_page = 500"):
        check_plugin(GithubPlugin(), config={"token": "x", "per_page": 500})


# -- a fuzzed class of bad configs ------------------------------------------------------------

_WRONG: dict[str, list[Any]] = {
    "org": [1, 2.5, [], ["a"], {"a": 1}, True],
    "per_page": ["many", "", 0, 101, -5, 2.5, [], {"a": 1}, "1e9"],
    "verbose": ["perhaps", 7, [], {"a": 1}, 2.5],
    "labels": ["bug", 3, {"a": 1}, [1], [["x"]]],
    "timeout": ["soon", [], {"a": 1}, "x", "1,5"],
}


def _bad_config(rng: random.Random) -> tuple[dict[str, Any], set[str], dict[str, str]]:
    """A config with some keys of the wrong kind, some unknown ones and maybe an unset secret."""
    config: dict[str, Any] = {"token": "$SECRET"}
    env = {"SECRET": "s3cr3t-" + "".join(rng.choices(string.ascii_letters, k=12))}
    bad: set[str] = set()
    for key in rng.sample(sorted(_WRONG), rng.randint(0, len(_WRONG))):
        config[key] = rng.choice(_WRONG[key])
        bad.add(key)
    for _ in range(rng.randint(0, 3)):
        unknown = "x" + "".join(rng.choices(string.ascii_lowercase + "_", k=rng.randint(1, 10)))
        config[unknown] = rng.choice([1, "a", [1], {"b": 2}])
        bad.add(unknown)
    if not bad or rng.random() < 0.2:
        config["token"] = "$UNSET_" + "".join(rng.choices(string.ascii_uppercase, k=6))
        bad.add("token")
    return config, bad, env


@pytest.mark.parametrize("seed", range(40))
def test_fuzzed_bad_configs_leave_the_plugin_out_naming_every_bad_key(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    config, bad, env = _bad_config(rng)

    failure = failure_of(assemble_with(tmp_path, GithubPlugin(), config, **env))

    text = "\n".join(failure.problems)
    for key in bad:
        assert f"[plugins.github] {key}" in text, (config, text)
    assert env["SECRET"] not in text and env["SECRET"] not in str(failure)
    assert all(p.startswith("[plugins.github] ") for p in failure.problems)


@pytest.mark.slow  # a subprocess
def test_oracle_plugins_lists_every_config_problem_of_an_installed_plugin(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "ORACLE_HOME": str(tmp_path),
        "ORACLE_LOAD_PLUGINS": "weather",
        "ORACLE_PLUGIN_WEATHER__TIMEOUT": "soon",
        "ORACLE_PLUGIN_WEATHER__TIMOUT": "3",
    }

    result = subprocess.run(
        [sys.executable, "-m", "oracle_core", "plugins"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert "weather [oracle-plugin-weather]: 2 problems" in result.stdout
    assert (
        "ORACLE_PLUGIN_WEATHER__TIMOUT is not a setting of plugin 'weather' (did you mean "
        "'timeout'?)" in result.stdout
    )
    assert "ORACLE_PLUGIN_WEATHER__TIMEOUT = 'soon': must be a positive number" in result.stdout


def test_a_value_for_a_secret_field_is_never_shown_from_any_source(tmp_path: Path) -> None:
    class Tokens(GithubPlugin):
        @hookimpl
        def oracle_manifest(self) -> PluginManifest:
            class Secrets(BaseModel):
                token: SecretStr | None = None
                pin: SecretStr = Field(min_length=8)

            return PluginManifest(name="github", summary="x", when_to_use=["x"], config=Secrets)

    failure = failure_of(
        assemble_with(tmp_path, Tokens(), {"token": 12345}, ORACLE_PLUGIN_GITHUB__PIN="ghp_1")
    )

    assert "12345" not in str(failure) and "ghp_1" not in str(failure)
    assert failure.problems == [
        "[plugins.github] token (a secret: the value is not shown): Input should be a valid string",
        "ORACLE_PLUGIN_GITHUB__PIN (a secret: the value is not shown): Value should have at "
        "least 8 items after validation, not 5",
    ]
