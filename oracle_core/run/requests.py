"""Building the model request of each step: system prompt, messages, the gate's tools.

The builder belongs to one assembled registry and one surface. Which tools a request shows
is the gate's to say (:class:`~oracle_core.capabilities.gate.Gate`, which keeps one tool
list per distinct set of loaded plugins); the builder adds the system prompt (with the
Tier-1 block on the catalog surface) and counts the tokens of each part of a request for
the ``model_call`` event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from oracle_core.authoring.tools.tool import Tool
from oracle_core.capabilities.gate import Gate
from oracle_core.capabilities.meta_tools import GET_OPERATION_TOOL, META_TOOLS
from oracle_core.capabilities.prompt import system_prompt, tier1_block
from oracle_core.capabilities.surface import Surface
from oracle_core.plugins.registry import Registry
from oracle_core.values.messages import ModelRequest, RequestTool
from oracle_core.values.run_options import ClientTool, RunOptions
from oracle_core.values.tokens import count_json_tokens, count_message_tokens, count_tokens

_META = (*META_TOOLS, GET_OPERATION_TOOL)
"""Tools counted as meta-tools in a request's token split."""


class RequestBuilder:
    """Makes each step's :class:`ModelRequest` for one registry.

    Args:
        registry: the assembled plugins.
        instructions: the opening of the system prompt.
        surface: what the model is shown (default: the catalog).

    Raises:
        SurfaceError: a specialist surface names a tool ``registry`` does not have.
    """

    def __init__(
        self, registry: Registry, instructions: str, surface: Surface | None = None
    ) -> None:
        self.registry = registry
        self.instructions = instructions
        self.gate = Gate(registry, surface)
        self.surface: Surface = self.gate.surface
        self.tier1_block = "" if self.gate.specialist is not None else tier1_block(registry)
        self.system_prompt = system_prompt(instructions, self.tier1_block)
        self._fixed_tokens: tuple[int, int] | None = None
        self._schema_tokens: dict[int, int] = {}

    def tools_for(self, loaded: Sequence[str]) -> tuple[Tool, ...]:
        """What the gate shows in a thread with ``loaded`` plugins: meta-tools first.

        On a specialist surface: exactly its tools, whatever is loaded.
        """
        return self.gate.tools(loaded)

    def build(
        self,
        *,
        thread_id: str,
        run_id: str,
        step: int,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        loaded: Sequence[str],
        user_id: str = "default",
        operations: bool = False,
        options: RunOptions | None = None,
    ) -> ModelRequest:
        """The request of one step, with the gate's tool list.

        ``operations``: the thread has an operation, so ``get_operation`` is shown right
        after the three meta-tools (never on a specialist surface). ``options``: what the
        caller added to the run: its client tools come after the gate's, and its model
        options go with the request.
        """
        tools: tuple[RequestTool, ...] = self.gate.tools(loaded, operations=operations)
        if options is not None and options.client_tools:
            # A client tool named like a silent one takes its place for this run (refusing
            # it would tell the caller the silent tool exists: run/client.py).
            names = options.client_names
            tools = (*(t for t in tools if t.name not in names), *options.client_tools)
        return ModelRequest(
            thread_id=thread_id,
            run_id=run_id,
            step=step,
            model=model,
            system_prompt=self.system_prompt,
            messages=tuple(messages),
            tools=tools,
            options=options.model_options if options is not None else {},
            user_id=user_id,
        )

    def schema_tokens(self, tool: RequestTool) -> int:
        """Tokens of one tool's OpenAI definition (counted once per tool of the oracle)."""
        if isinstance(tool, ClientTool):  # a caller's, new with each run: not kept
            return count_json_tokens(tool.openai_schema())
        key = id(tool)
        count = self._schema_tokens.get(key)
        if count is None:
            count = self._schema_tokens[key] = count_json_tokens(tool.openai_schema())
        return count

    def token_split(
        self, request: ModelRequest, message_tokens: int | None = None
    ) -> dict[str, int]:
        """The prompt of ``request`` in tokens: Tier-1 block, meta-tools, tool schemas, messages.

        Args:
            request: the request.
            message_tokens: the tokens of ``request.messages`` when the caller keeps a
                running count (the run loop does, so no message is counted twice);
                counted here otherwise.
        """
        if self._fixed_tokens is None:
            tier1 = count_tokens(self.tier1_block) if self.tier1_block else 0
            self._fixed_tokens = (tier1, count_tokens(self.instructions))
        tier1, instructions = self._fixed_tokens
        meta = sum(self.schema_tokens(t) for t in request.tools if t in _META)
        schemas = sum(self.schema_tokens(t) for t in request.tools if t not in _META)
        if message_tokens is None:
            message_tokens = sum(count_message_tokens(m) for m in request.messages)
        messages = instructions + message_tokens
        return {
            "tier1": tier1,
            "meta_tools": meta,
            "tool_schemas": schemas,
            "messages": messages,
            "total": tier1 + meta + schemas + messages,
        }
