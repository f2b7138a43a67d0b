"""Connections in manifests and tools: what a plugin may declare, and the errors when it errs."""

from __future__ import annotations

import random
import string
from typing import Any

import pytest
from pydantic import ValidationError

from oracle_core import (
    Connection,
    ManifestError,
    Oracle,
    PluginError,
    PluginManifest,
    Settings,
    Tool,
    ToolContext,
    ToolDefinitionError,
    hookimpl,
    tool,
)
from oracle_core.authoring.connections import CONNECTION_NAME


class Declaring:
    """A plugin declaring ``connections`` (dicts or Connection objects) with ``tools``."""

    def __init__(self, connections: list[Any], tools: list[Tool], name: str = "gh") -> None:
        self.__name__ = name  # how a plugin given in code is named before its manifest is valid
        self.name = name
        self.connections = connections
        self.tools = tools

    @hookimpl
    def oracle_manifest(self) -> Any:
        return {
            "name": self.name,
            "summary": "GitHub.",
            "when_to_use": ["the user asks about repositories"],
            "connections": self.connections,
        }

    @hookimpl
    def oracle_tools(self) -> list[Tool]:
        return self.tools


class Constructing(Declaring):
    """Builds ``Connection(...)`` inside its manifest hook, as plugin code usually does."""

    @hookimpl
    def oracle_manifest(self) -> Any:
        return PluginManifest(
            name=self.name,
            summary="GitHub.",
            when_to_use=["the user asks about repositories"],
            connections=[Connection(**c) for c in self.connections],
        )


@tool(connections=["token"])
def list_repos(ctx: ToolContext) -> str:
    """List the user's repositories."""
    return "repos"


def failure_of(plugin: object, tmp_path: Any) -> PluginError:
    oracle = Oracle(
        [plugin], entry_points=False, settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)})
    )
    assert not oracle.registry.plugins, "the plugin should have been left out"
    (failure,) = oracle.registry.failures
    return failure


def test_a_plugin_declares_connections_and_its_tools_list_them(tmp_path: Any) -> None:
    plugin = Constructing([{"name": "token", "help": "A personal access token."}], [list_repos])

    oracle = Oracle(
        [plugin], entry_points=False, settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)})
    )

    (connection,) = oracle.registry.plugins["gh"].manifest.connections
    assert connection == Connection(
        name="token", kind="api_key", per_user=True, help=connection.help
    )
    assert oracle.registry.tools["list_repos"].tool.connections == ("token",)


def bad_names(seed: int, count: int) -> list[str]:
    """Names that break the rule, of every kind: case, first character, length, characters."""
    rng = random.Random(seed)
    alphabet = string.ascii_lowercase + string.digits + "-_"
    found = [
        "",
        "Token",
        "1token",
        "_token",
        "-token",
        "to ken",
        "tok.en",
        "tok/en",
        "tok\x00en",
        "tökén",
        "token\n",
        "a" * 65,
        "🔑",
    ]
    while len(found) < count:
        body = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))
        breaker = rng.choice(
            [
                lambda b: rng.choice(string.ascii_uppercase) + b,
                lambda b: rng.choice(string.digits + "-_") + b,
                lambda b: "a" + b + rng.choice(" .:/\\@!\t'\"é中"),
                lambda b: "a" + b + "a" * 64,
            ]
        )
        found.append(breaker(body))
    assert not any(CONNECTION_NAME.fullmatch(name) for name in found)
    return found


@pytest.mark.parametrize("name", bad_names(seed=14, count=40))
def test_a_bad_connection_name_fails_the_plugin_naming_it_and_the_field(
    name: str, tmp_path: Any
) -> None:
    failure = failure_of(Declaring([{"name": name}], []), tmp_path)

    assert isinstance(failure, ManifestError)
    assert failure.plugin == "gh"
    assert failure.field == "connections.0.name"
    assert "connections.0.name" in str(failure)


@pytest.mark.parametrize("name", bad_names(seed=15, count=10))
def test_a_bad_name_in_a_connection_built_in_code_names_the_connections_field(
    name: str, tmp_path: Any
) -> None:
    failure = failure_of(Constructing([{"name": name}], []), tmp_path)

    assert isinstance(failure, ManifestError)
    assert failure.field == "connections.name"
    assert "is not a valid connection name" in str(failure) or "string" in str(failure)


def test_a_connection_declared_twice_is_refused(tmp_path: Any) -> None:
    failure = failure_of(Declaring([{"name": "token"}, {"name": "token"}], []), tmp_path)

    assert isinstance(failure, ManifestError)
    assert failure.field == "connections"
    assert "declares connection 'token' more than once" in str(failure)


@pytest.mark.parametrize(
    ("entry", "field", "words"),
    [
        ({"name": "token", "kind": "password"}, "connections.0.kind", "'api_key' or 'oauth2'"),
        ({"name": "token", "colour": "red"}, "connections.0.colour", "not a manifest field"),
        ({"name": "token", "per_user": "sometimes"}, "connections.0.per_user", "boolean"),
        ({"kind": "api_key"}, "connections.0.name", "is required"),
        ("token", "connections.0", "Connection"),
    ],
)
def test_bad_connection_fields_are_named(entry: Any, field: str, words: str, tmp_path: Any) -> None:
    failure = failure_of(Declaring([entry], []), tmp_path)

    assert isinstance(failure, ManifestError)
    assert failure.field == field
    assert words in str(failure)


def test_a_tool_listing_an_undeclared_connection_names_plugin_tool_and_connection(
    tmp_path: Any,
) -> None:
    failure = failure_of(Declaring([{"name": "tokn"}], [list_repos]), tmp_path)

    message = str(failure)
    assert failure.plugin == "gh"
    assert "tool 'list_repos' lists connection 'token'" in message
    assert "plugin 'gh' does not declare" in message
    assert "did you mean 'tokn'?" in message


def test_a_tool_listing_connections_must_take_a_context(tmp_path: Any) -> None:
    @tool(connections=["token"])
    def blind() -> str:
        """Cannot read its credential."""
        return ""

    failure = failure_of(Declaring([{"name": "token"}], [blind]), tmp_path)

    assert "tool 'blind' lists connections but takes no ToolContext parameter" in str(failure)


@pytest.mark.parametrize("name", bad_names(seed=16, count=12))
def test_the_decorator_refuses_a_bad_connection_name(name: str) -> None:
    with pytest.raises(ToolDefinitionError, match="not a valid connection name"):

        @tool(connections=[name])
        def needs(ctx: ToolContext) -> str:
            """Needs it."""
            return ""


def test_the_decorator_refuses_a_string_for_a_list() -> None:
    with pytest.raises(ToolDefinitionError, match=r"connections must be a list"):

        @tool(connections="token")
        def needs(ctx: ToolContext) -> str:
            """Needs it."""
            return ""


def test_connection_defaults_are_per_user_api_keys() -> None:
    connection = Connection(name="token")

    assert (connection.kind, connection.per_user, connection.help) == ("api_key", True, "")
    with pytest.raises(ValidationError):
        Connection(name="token", kind="basic")  # type: ignore[arg-type]


def test_a_context_gives_only_the_credentials_its_tool_lists() -> None:
    from oracle_core import CredentialMissingError, Secret, UnknownConnectionError

    ctx = ToolContext(
        plugin="gh",
        tool="list_repos",
        credentials={"token": Secret("ghp_ctx_value_123456"), "org": None},
    )

    assert ctx.credential("token").reveal() == "ghp_ctx_value_123456"
    assert "ghp_ctx_value_123456" not in repr(ctx)
    with pytest.raises(UnknownConnectionError, match=r"tool 'list_repos' of plugin 'gh' asked"):
        ctx.credential("other")
    with pytest.raises(CredentialMissingError, match="oracle connections set gh org"):
        ctx.credential("org")
