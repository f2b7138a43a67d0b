"""What a caller may add to one run: its own tools, and options for the model calls.

An application that uses the oracle as its model (the OpenAI-compatible endpoint, an
agent framework) brings tools of its own: :class:`ClientTool`. They are offered to the
model beside the oracle's own surface, under the same gate, but the oracle never runs them:
a model call of one ends the run as ``waiting_for_client`` with the call handed back
(:attr:`~oracle_core.RunResult.client_calls`), and the caller continues the same run with
the results (``oracle.run(thread_id, tool_results={call_id: text})``).

``model_options`` are passed to every model call of the run (``temperature``, ``top_p``,
``max_tokens``, ``stop``, ``seed``, ``response_format``, ``tool_choice``, ...). Three of them
set how each call is made and are not sent: ``timeout`` (seconds an attempt may take),
``num_retries`` and ``retry_on``. Each wins, for this run, over the operator's
``[models."<model>"]`` settings and the environment (docs/models.md).

``output`` is the JSON the final answer must be (:class:`~oracle_core.OutputSchema`): the
model is asked for it with its ``response_format`` and the run checks the answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from oracle_core.values.limits import USAGE_LIMITS, RunLimits
from oracle_core.values.messages import function_definition
from oracle_core.values.output import OutputSchema, OutputType


@dataclass(frozen=True)
class ClientTool:
    """A tool the caller runs itself, shown to the model like the oracle's own.

    Attributes:
        name: the name the model calls it by.
        description: what it does, as the model reads it.
        parameters: the JSON schema of its arguments.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object"})

    def __post_init__(self) -> None:
        object.__setattr__(self, "parameters", dict(self.parameters))  # its own copy

    def openai_schema(self) -> dict[str, Any]:
        """The tool as an OpenAI ``tools`` entry."""
        return function_definition(self.name, self.description, self.parameters)


@dataclass(frozen=True)
class RunOptions:
    """What one run adds to the oracle's own setup.

    Attributes:
        client_tools: tools the caller runs (see the module docstring).
        model_options: keyword options passed to every model call of the run (``timeout``,
            ``num_retries`` and ``retry_on`` set how they are made and are not sent).
        output: the JSON the final answer must be, if any (see :meth:`for_run`).
        limits: usage limits of this run alone (``max_requests`` to ``max_cost``; the
            other fields are not read); each tightens the oracle's own, never loosens it.
    """

    client_tools: tuple[ClientTool, ...] = ()
    model_options: Mapping[str, Any] = field(default_factory=dict)
    output: OutputSchema | None = None
    limits: RunLimits | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "client_tools", tuple(self.client_tools))
        object.__setattr__(self, "model_options", MappingProxyType(dict(self.model_options)))

    @property
    def client_names(self) -> frozenset[str]:
        """The names of the client tools."""
        return frozenset(t.name for t in self.client_tools)

    def for_run(self, output_type: OutputType | None = None) -> RunOptions:
        """These options as a run uses them: ``output_type`` (if given) as the output, and
        the output's ``response_format`` in the model options unless they hold one.

        Raises:
            OutputSchemaError: ``output_type`` is not a pydantic model class nor a valid
                JSON Schema.
        """
        output = OutputSchema.of(output_type) if output_type is not None else self.output
        options = dict(self.model_options)
        if output is not None:  # a caller's own response_format wins: it knows its provider
            options.setdefault("response_format", output.response_format())
        return replace(self, model_options=options, output=output)


def options_json(options: RunOptions) -> dict[str, Any] | None:
    """``options`` as JSON-ready data, for the run's record (``None``: nothing to keep).

    A run that stops (for a person, a credential) and resumes, maybe in another process,
    goes on with the same client tools, model options and output. Model options that are
    not JSON are left out; an output made from a pydantic model keeps its schema only (a
    resumed run checks the answer against it and gives the parsed JSON).
    """
    limits = options.limits.usage if options.limits is not None else {}
    if (
        not options.client_tools
        and not options.model_options
        and options.output is None
        and not limits
    ):
        return None
    model_options = {}
    for key, value in options.model_options.items():
        try:
            model_options[key] = json.loads(json.dumps(value))
        except (TypeError, ValueError):
            continue
    output = options.output
    return {
        "client_tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in options.client_tools
        ],
        "model_options": model_options,
        "output": None
        if output is None
        else {
            "schema": dict(output.schema),
            "name": output.name,
            "any_object": output.any_object,
            "strict": output.strict,
        },
        "limits": limits,
    }


def options_from_json(data: Mapping[str, Any] | None) -> RunOptions:
    """The options :func:`options_json` kept (empty options for ``None``)."""
    if not data:
        return RunOptions()
    output = data.get("output")
    limits = data.get("limits") or {}
    return RunOptions(
        client_tools=tuple(
            ClientTool(t["name"], t.get("description", ""), t.get("parameters") or {})
            for t in data.get("client_tools") or ()
        ),
        model_options=dict(data.get("model_options") or {}),
        output=None
        if not output
        else OutputSchema(
            output["schema"],
            name=output.get("name", "output"),
            any_object=bool(output.get("any_object")),
            strict=bool(output.get("strict")),
        ),
        limits=RunLimits(**{k: v for k, v in limits.items() if k in USAGE_LIMITS})
        if limits
        else None,
    )
