"""``[mcp.<name>]`` in oracle.toml: what is accepted, and errors that name the server and key."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from oracle_core import MCPServer, Oracle, PluginConfigError, Settings
from oracle_core.plugins.mcp.config import server_from_table, servers_from_config
from oracle_core.plugins.mcp.listing import ListingCache, build_listing


def test_a_stdio_table_reads_command_args_env_and_manifest_fields() -> None:
    table = {"command": "npx", "args": ["-y", "srv"], "env": {"TOKEN": {"$env": "GH"}},
             "summary": "GitHub.", "tags": ["code"], "timeout": 5}  # fmt: skip
    server = server_from_table("github", table, {"GH": "s3cret"})

    assert server is not None
    assert server.transport == "stdio"
    assert server.args == ("-y", "srv")
    assert server.env == {"TOKEN": "s3cret"}
    assert server.timeout == 5.0
    assert server.tool_prefix == "github_"
    assert "s3cret" not in repr(server.headers)


def test_an_http_table_resolves_header_secrets_both_ways() -> None:
    table = {"url": "https://example.test/mcp",
             "headers": {"Authorization": "$TOKEN", "X-Key": {"$env": "KEY"}, "X-Lit": "$$5"}}  # fmt: skip
    server = server_from_table("web-tools", table, {"TOKEN": "Bearer t", "KEY": "k"})

    assert server is not None
    assert server.headers == {"Authorization": "Bearer t", "X-Key": "k", "X-Lit": "$5"}
    assert server.tool_prefix == "web_tools_"
    assert "Bearer t" not in repr(server)


@pytest.mark.parametrize(
    ("table", "key", "words"),
    [
        ({"command": "x", "url": "http://a"}, None, "exactly one of 'command'"),
        ({}, None, "exactly one of 'command'"),
        ({"url": "ftp://a"}, "url", "http:// or https://"),
        ({"command": "x", "timeout": 0}, "timeout", "above 0"),
        ({"command": "x", "timeout": "fast"}, "timeout", "number of seconds"),
        ({"command": "x", "args": "a b"}, "args", "list of strings"),
        ({"command": "x", "env": {"A": 1}}, "env.A", "must be a string"),
        ({"command": "x", "env": {"A": "$MISSING"}}, "env.A", "'MISSING', which is not set"),
        ({"url": "http://a", "headers": {"H": {"$env": "NOPE"}}}, "headers.H", "not set"),
        ({"command": "x", "comand": "y"}, "comand", "unknown key 'comand'"),
        ({"command": "x", "visibility": "public"}, "visibility", "must be one of"),
        ({"command": "x", "max_restarts": True}, "max_restarts", "whole number"),
    ],
)
def test_a_bad_table_is_an_error_naming_the_server_and_the_key(
    table: dict[str, Any], key: str | None, words: str
) -> None:
    with pytest.raises(PluginConfigError) as error:
        server_from_table("github", table, {"SECRET": "v"})

    assert error.value.plugin == "github"
    assert error.value.key == key
    assert words in str(error.value)
    assert "[mcp.github]" in str(error.value)


def test_a_secret_never_appears_in_an_error() -> None:
    with pytest.raises(PluginConfigError) as error:
        server_from_table("s", {"command": "x", "env": {"A": "$SET"}, "timeout": -1},
                          {"SET": "hunter2"})  # fmt: skip
    assert "hunter2" not in str(error.value)


def test_a_bad_name_is_refused_in_code_too() -> None:
    with pytest.raises(PluginConfigError) as error:
        MCPServer("Bad Name", command="x")
    assert error.value.key == "name"


def test_disabled_tables_are_skipped_and_bad_ones_reported_without_the_others() -> None:
    config = {"mcp": {"a": {"command": "x"}, "b": {"command": "x", "enabled": False},
                      "c": {"url": 3}, "d": "not a table"}}  # fmt: skip
    servers, errors = servers_from_config(config, {})

    assert [s.name for s in servers] == ["a"]
    assert sorted(e.plugin for e in errors) == ["c", "d"]


def test_fuzzed_tables_either_load_or_fail_with_a_config_error() -> None:
    rng = random.Random(17)
    values: list[Any] = [None, True, 0, -1, 1.5, float("nan"), "", "x", "$V", "$$", [], ["a"],
                         [1], {}, {"$env": "V"}, {"$env": "NOPE"}, {"a": "b"}, {"a": {}}]  # fmt: skip
    keys = ["command", "args", "env", "url", "headers", "timeout", "summary", "tags",
            "max_restarts", "prefix", "visibility", "enabled", "backoff", "other"]  # fmt: skip
    for _ in range(500):
        table = {rng.choice(keys): rng.choice(values) for _ in range(rng.randint(0, 4))}
        try:
            server = server_from_table("fuzz", table, {"V": "v"})
        except PluginConfigError as error:
            assert error.plugin == "fuzz"
            continue
        assert server is None or bool(server.command) != bool(server.url)


def test_a_bad_table_in_oracle_toml_is_reported_and_the_oracle_still_builds(
    tmp_path: Path,
) -> None:
    (tmp_path / "oracle.toml").write_text('[mcp.broken]\nurl = "gopher://x"\n')
    oracle = Oracle(entry_points=False, settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)}))

    failure = next(f for f in oracle.registry.failures if f.plugin == "broken")
    assert isinstance(failure, PluginConfigError)
    assert failure.key == "url"


def test_the_listing_cache_is_kept_per_command_and_ignores_a_corrupt_file(tmp_path: Path) -> None:
    cache = ListingCache(tmp_path)
    server = MCPServer("s", command="one")
    listing = build_listing(server, [{"name": "t", "description": "T.",
                                      "inputSchema": {"type": "object"}}])  # fmt: skip
    cache.save(server, listing)

    again = cache.load(server)
    assert again is not None and [t.name for t in again.tools] == ["s_t"]
    assert cache.load(MCPServer("s", command="two")) is None
    cache.path(server).write_text("{not json")
    assert cache.load(server) is None
