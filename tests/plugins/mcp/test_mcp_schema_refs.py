"""An MCP server's tool schema never makes the oracle fetch a URL or read a file.

The arguments the model sends an MCP tool are checked against the server's input schema;
a ``$ref`` there to a URL or a ``file:`` path is left unresolved, never retrieved.
"""

from __future__ import annotations

import http.server
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oracle_core.plugins.mcp.results import schema_validator


@pytest.fixture
def counted_server() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that serves a schema and counts the requests it gets."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            body = b'{"type": "integer"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("seed", range(4))
def test_a_reference_outside_the_schema_is_never_retrieved(
    counted_server: tuple[str, list[str]], tmp_path: Path, seed: int
) -> None:
    url, seen = counted_server
    local = tmp_path / "schema.json"
    local.write_text('{"type": "integer"}')
    rng = random.Random(seed)
    targets = [f"{url}/x.json", f"{url}/defs.json#/a", local.as_uri(), "other.json"]
    for _ in range(8):
        ref = rng.choice(targets)
        schema = rng.choice(
            [
                {"type": "object", "properties": {"a": {"$ref": ref}}},
                {"$defs": {"d": {"$ref": ref}}, "properties": {"a": {"$ref": "#/$defs/d"}}},
                {"properties": {"a": {"anyOf": [{"$ref": ref}, {"type": "string"}]}}},
            ]
        )

        with pytest.raises(Exception) as raised:
            list(schema_validator(schema).iter_errors({"a": rng.choice([1, "x", [2]])}))
        assert type(raised.value).__module__.split(".")[0] in ("referencing", "jsonschema")

    assert seen == []


def test_a_call_checked_against_such_a_schema_is_refused_naming_the_tool(
    counted_server: tuple[str, list[str]],
) -> None:
    from oracle_core.errors import ToolArgumentsError
    from oracle_core.plugins.mcp.results import check_arguments

    url, seen = counted_server
    validator = schema_validator({"properties": {"a": {"$ref": f"{url}/x.json"}}})

    with pytest.raises(ToolArgumentsError, match="echo's input schema has a reference outside"):
        check_arguments("echo", validator, {"a": 1})
    assert seen == []
