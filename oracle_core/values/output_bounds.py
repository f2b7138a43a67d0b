"""The bounds an output schema is held to, checked once before a run starts with it.

A schema comes from whoever calls the oracle (an HTTP client's ``output_schema`` or
``response_format``), and checking an answer against it must neither stall the server nor
reach outside it. So a schema is refused, naming the field and the fix, when it is:

- larger than :data:`MAX_SCHEMA_CHARS` characters of JSON, or nested deeper than
  :data:`MAX_SCHEMA_DEPTH` objects and arrays (checking cost grows with both);
- referring anywhere but inside itself: every ``$ref`` (``$dynamicRef``, ``$recursiveRef``)
  is ``#`` or a ``#/...`` pointer to a place the schema has, and only the root may carry an
  ``$id`` (an inner one would make ``#/...`` point into another document). Nothing in a
  schema makes the oracle fetch a URL or read a file: the validator's registry refuses
  every retrieval too (``values/output_validator.py``);
- holding a ``pattern`` or ``patternProperties`` key that the ``regex`` module does not
  compile, or longer than :data:`MAX_PATTERN_CHARS`. Answers are matched with ``regex`` and
  a timeout, never with ``re``: a backtracking ``re`` match cannot be stopped and holds the
  interpreter lock, so one ``^(a+)+$`` stalled every thread. Refusing "dangerous" patterns
  by their shape instead would refuse good ones and miss others (``(a|a)*``, ``\\d*\\d*x``);
- using ``unevaluatedProperties`` beside ``patternProperties``: jsonschema matches those
  patterns with ``re`` inside, where no timeout reaches (``additionalProperties`` does
  the same job and is checked with ``regex``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

MAX_SCHEMA_CHARS = 100_000
"""Characters of an output schema's JSON (OpenAI's own limits are of the same order)."""

MAX_SCHEMA_DEPTH = 32
"""Objects and arrays nested in an output schema (``properties`` and a property's schema
count one each: about 15 levels of nested objects)."""

MAX_PATTERN_CHARS = 1_000
"""Characters of one ``pattern`` or ``patternProperties`` key."""

_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
_PLAIN = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")  # a key a path shows without quotes


def bounds_problem(schema: Mapping[str, Any]) -> str | None:
    """What puts ``schema`` past a bound (see the module), in one sentence, or ``None``."""
    nodes = list(_walk(schema))
    if (problem := _shape_problem(schema, nodes)) is not None:
        return problem
    for node, where in nodes:
        if isinstance(node, Mapping) and (problem := _node_problem(schema, node, where)):
            return problem
    return None


def shape_problem(schema: Mapping[str, Any]) -> str | None:
    """Whether ``schema`` is past the size or the depth bound (any JSON Schema the oracle
    checks, a client tool's parameters too: the meta-schema's check grows with both)."""
    return _shape_problem(schema, list(_walk(schema)))


def _shape_problem(schema: Mapping[str, Any], nodes: list[tuple[Any, str]]) -> str | None:
    if nodes and nodes[-1][0] is _TOO_DEEP:
        return (
            f"is nested deeper than {MAX_SCHEMA_DEPTH} objects and arrays (at "
            f"{nodes[-1][1]}): flatten it, or name repeated parts once under $defs"
        )
    size = len(json.dumps(schema, ensure_ascii=False))
    if size > MAX_SCHEMA_CHARS:
        return (
            f"is {size:,} characters of JSON, more than the {MAX_SCHEMA_CHARS:,} allowed: "
            "send a smaller schema"
        )
    return None


_TOO_DEEP = object()


def _walk(schema: Mapping[str, Any]) -> Iterator[tuple[Any, str]]:
    """Every object and array of ``schema`` with its JSON path; ``(_TOO_DEEP, path)`` last
    when one is nested past the bound (the walk stops there, without recursion)."""
    stack: list[tuple[Any, str, int]] = [(schema, "$", 1)]
    while stack:
        node, where, depth = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            yield _TOO_DEEP, where
            return
        yield node, where
        items = node.items() if isinstance(node, Mapping) else enumerate(node)
        for key, value in items:
            if isinstance(value, Mapping | list):
                step = (
                    f"[{key}]"
                    if isinstance(key, int)
                    else f".{key}"
                    if _PLAIN.fullmatch(str(key))
                    else f"[{json.dumps(key)}]"
                )
                stack.append((value, where + step, depth + 1))


def _node_problem(root: Mapping[str, Any], node: Mapping[str, Any], where: str) -> str | None:
    for keyword in _REFS:
        ref = node.get(keyword)
        if isinstance(ref, str) and not _resolves(root, ref):
            return (
                f"has {keyword} {ref[:200]!r} at {where}: a reference must point inside the "
                "schema ('#' or '#/$defs/NAME', to a place it has); remote and file "
                "references are never fetched, so copy the referred schema under $defs"
            )
    if where != "$" and isinstance(node.get("$id"), str):
        return (
            f"has an $id at {where}: only the root may have one (an inner $id would make "
            "'#/...' references point outside the schema); remove it"
        )
    pattern = node.get("pattern")
    if isinstance(pattern, str) and (problem := _pattern_problem(pattern)):
        return f"has a pattern at {where}.pattern that {problem}"
    keys = node.get("patternProperties")
    if isinstance(keys, Mapping):
        for key in keys:
            if problem := _pattern_problem(str(key)):
                return f"has a patternProperties key at {where} that {problem}"
        if "unevaluatedProperties" in node:
            return (
                f"has unevaluatedProperties beside patternProperties at {where}, which is "
                "not supported: use additionalProperties"
            )
    return None


def _resolves(root: Mapping[str, Any], ref: str) -> bool:
    """Whether ``ref`` is ``#`` or a ``#/...`` JSON pointer to a place ``root`` has."""
    if ref == "#":
        return True
    if not ref.startswith("#/"):
        return False
    from urllib.parse import unquote

    node: Any = root
    for part in ref[2:].split("/"):
        token = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False
    return isinstance(node, Mapping | bool)


def _pattern_problem(pattern: str) -> str | None:
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"is {len(pattern):,} characters, more than the {MAX_PATTERN_CHARS:,} allowed"
    import regex

    try:
        regex.compile(pattern)
    except (regex.error, RecursionError, OverflowError) as error:
        return f"is not a regular expression ({error})"
    return None
