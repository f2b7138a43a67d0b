"""What the model reads for an MCP ``tools/call`` result, and argument checks against a schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from oracle_core.errors import ToolArgumentsError, ToolError

if TYPE_CHECKING:
    from mcp.types import CallToolResult

MAX_ERRORS = 5
"""Schema violations named in one argument error."""


def result_value(server: str, result: CallToolResult) -> Any:
    """The tool's answer for the model: structured content if any, else its text.

    Text blocks are joined; an embedded text resource is read as text; images, audio and
    binary resources are named (with their type and size) but not sent, since the model
    reads tool results as text.

    Raises:
        ToolError: when the server marked the result ``isError`` (its text is the message).
    """
    parts = [_block_text(block) for block in result.content or ()]
    text = "\n".join(p for p in parts if p)
    if result.is_error:
        raise ToolError(text or f"the MCP server {server!r} reported an error without a message")
    if result.structured_content is not None:
        return result.structured_content
    return text


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        data = getattr(block, "data", "") or ""
        return f"[{kind} {getattr(block, 'mime_type', '?')}, {len(data) * 3 // 4} bytes, not shown]"
    if kind == "resource":
        resource = getattr(block, "resource", None)
        text = getattr(resource, "text", None)
        uri = getattr(resource, "uri", "")
        return str(text) if isinstance(text, str) else f"[binary resource {uri}, not shown]"
    if kind == "resource_link":
        return f"[resource {getattr(block, 'uri', '')}]"
    return f"[{kind or 'unknown'} content, not shown]"


def check_arguments(tool: str, validator: Any, arguments: Any) -> dict[str, Any]:
    """``arguments`` if they fit the tool's schema (``validator``: from :func:`schema_validator`).

    Raises:
        ToolArgumentsError: naming up to :data:`MAX_ERRORS` fields that do not fit, or
            saying the schema refers outside itself.
    """
    if not isinstance(arguments, dict):
        raise ToolArgumentsError(f"invalid arguments for {tool}: send a JSON object")
    problems = []
    try:
        for error in validator.iter_errors(arguments):
            where = ".".join(str(p) for p in error.absolute_path) or "arguments"
            problems.append(f"{where}: {error.message[:200]}")
            if len(problems) >= MAX_ERRORS:
                break
    except Exception as error:  # a reference outside the schema, which is never fetched
        if type(error).__module__.split(".")[0] not in ("referencing", "jsonschema"):
            raise
        raise ToolArgumentsError(
            f"{tool}'s input schema has a reference outside it, which is not fetched: "
            "the MCP server's schema must be self-contained"
        ) from None
    if problems:
        raise ToolArgumentsError(f"invalid arguments for {tool}: " + "; ".join(problems))
    return arguments


def schema_validator(schema: Mapping[str, Any]) -> Any:
    """A JSON Schema validator for ``schema``, of the draft the schema names (default 2020-12).

    Its references resolve inside the schema only (an MCP server's ``$ref`` to a URL or a
    file is never fetched: :func:`~oracle_core.values.output_validator.local_registry`).
    """
    from jsonschema.validators import validator_for

    from oracle_core.values.output_validator import local_registry

    return validator_for(schema)(schema, registry=local_registry())
