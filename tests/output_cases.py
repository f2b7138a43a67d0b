"""Seeded output schemas and answers that went past the bounds of structured output
(issue 38): remote and file references, huge and deep schemas, ``$defs`` that recurse
through ``anyOf``/``oneOf`` with deeply nested answers, and backtracking patterns.

Each maker takes a ``random.Random``, so a failing case is found again from its seed.
"""

from __future__ import annotations

import json
import random
from http.server import BaseHTTPRequestHandler
from typing import Any

from support import LoopbackServer

EVIL_PATTERNS = (
    r"^(a+)+$",
    r"^(a|a)*$",
    r"^(a|aa)+$",
    r"^(a*)*$",
    r"^(\w+\s?)*$",
    r"^([a-z]+)*[0-9]$",
    r"(x+x+)+y",
    r"^(a|ab|b)*c$",
    r"^(.*a){12}$",
    r"^(a?){25}a{25}$",
)
"""Patterns that backtrack without end in ``re`` on the right string."""


def remote_refs(rng: random.Random, base: str, file: str) -> list[str]:
    """References that point outside a schema: to ``base`` (an HTTP server on loopback),
    to the file ``file``, and to other places no check may reach."""
    name = f"s{rng.randrange(1000)}.json"
    return [
        f"{base}/{name}",
        f"{base}/{name}#/$defs/x",
        f"file://{file}",
        f"file://{file}#/a",
        f"file:{file}",
        name,
        f"./{name}#/a",
        f"//127.0.0.1/{name}",
        "urn:example:schema",
        "#/$defs/missing",
        "#anchor",
    ]


def place(rng: random.Random, keyword: str, ref: str) -> dict[str, Any]:
    """A schema with ``{keyword: ref}`` somewhere inside it (a property, an item, a branch,
    a definition used or not)."""
    inner: dict[str, Any] = {keyword: ref}
    for _ in range(rng.randrange(4)):
        inner = rng.choice(
            [
                {"type": "object", "properties": {f"p{rng.randrange(9)}": inner}},
                {"type": "array", "items": inner},
                {"anyOf": [{"type": "null"}, inner]},
                {"allOf": [inner]},
            ]
        )
    schema: dict[str, Any] = {"type": "object", "properties": {"a": inner}}
    if rng.random() < 0.3:
        schema = {"type": "object", "$defs": {"d": inner}, "properties": {"a": {"type": "string"}}}
    return schema


def huge_schema(rng: random.Random, over: int) -> dict[str, Any]:
    """An object schema of more than ``over`` characters of JSON, shaped at random."""
    properties: dict[str, Any] = {}
    size = 0
    while size <= over:
        name = f"field_{len(properties)}_{rng.randrange(10**6)}"
        prop = rng.choice(
            [
                {"type": "string", "description": "x" * rng.randrange(10, 400)},
                {"enum": [f"v{i}" for i in range(rng.randrange(1, 60))]},
                {"type": "object", "properties": {"n": {"type": "integer"}}},
            ]
        )
        properties[name] = prop
        size += len(json.dumps({name: prop}))
    return {"type": "object", "properties": properties}


def deep_schema(rng: random.Random, depth: int) -> dict[str, Any]:
    """A schema whose objects and arrays nest ``depth`` deep or more (built without
    recursion)."""
    schema: dict[str, Any] = {"type": "string"}
    nested = 1
    while nested < depth:
        kind = rng.randrange(3)
        if kind == 0:
            schema = {"type": "object", "properties": {"x": schema}}
            nested += 2
        elif kind == 1:
            schema = {"type": "array", "items": schema}
            nested += 1
        else:
            schema = {"anyOf": [schema, {"type": "null"}]}
            nested += 2
    return schema


def recursive_case(rng: random.Random) -> tuple[dict[str, Any], Any]:
    """A schema whose ``$defs`` recurse through 3 to 6 ``anyOf``/``oneOf`` branches, and an
    answer nested 12 to 30 arrays deep that fits none at its bottom."""
    branches = rng.randrange(3, 7)
    combinator = rng.choice(["anyOf", "oneOf"])
    options: list[dict[str, Any]] = [
        {"type": "array", "items": {"$ref": "#/$defs/node"}, "minItems": i} for i in range(branches)
    ]
    options.append({"type": rng.choice(["integer", "boolean", "null"])})
    schema = {"$defs": {"node": {combinator: options}}, "$ref": "#/$defs/node"}
    answer: Any = rng.choice(["leaf", 1.5, {"k": "v"}])
    for _ in range(rng.randrange(12, 31)):
        answer = [answer]
    return schema, answer


def pattern_case(rng: random.Random) -> tuple[dict[str, Any], Any]:
    """A backtracking pattern and an answer that makes it backtrack: as a string's
    ``pattern``, as a ``patternProperties`` key with ``additionalProperties: false``, or
    in ``anyOf`` branches."""
    pattern = rng.choice(EVIL_PATTERNS)
    attack = "a" * rng.randrange(26, 60) + rng.choice(["!", "#", "\n!"])
    kind = rng.randrange(3)
    if kind == 0:
        return {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}, {
            "s": attack
        }
    if kind == 1:
        return {
            "type": "object",
            "patternProperties": {pattern: {"type": "string"}},
            "additionalProperties": False,
        }, {attack: "x"}
    return {
        "type": "array",
        "items": {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": pattern}]},
    }, [attack] * rng.randrange(1, 4)


PLANTED = "planted-3f9c2b"
"""A string in every document :class:`CountingServer` serves and every file a test plants:
an error that repeats it read a document it must never read."""


class CountingServer(LoopbackServer):
    """A loopback HTTP server that counts every request and answers each with a JSON
    Schema holding :data:`PLANTED` (what a fetched ``$ref`` would get)."""

    def __init__(self) -> None:
        self.requests: list[str] = []

    def handler(self) -> type[BaseHTTPRequestHandler]:
        seen = self.requests

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                seen.append(self.path)
                body = json.dumps({"type": "integer", "description": PLANTED}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler

    @property
    def base(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return self.url.removesuffix("/v1")
