"""Problems of a plugin's tools: names, OpenAI definitions, argument models, reachability."""

from __future__ import annotations

from collections.abc import Sequence

from oracle_core.authoring.tools.tool import Tool, plain_schema, simple_parameters
from oracle_core.errors import PluginConflictError, ToolArgumentsError, ToolDefinitionError
from oracle_core.plugins.registry import META_TOOL_NAMES
from oracle_core.plugins.validate.function_schema import (
    function_schema_problems,
    parameters_problems,
)
from oracle_core.plugins.validate.problems import Problem


def tool_problems(
    plugin: str, visibility: str, tools: Sequence[Tool]
) -> tuple[list[Problem], list[Problem]]:
    """Errors and warnings of a plugin's tools: names, OpenAI definitions, reachability.

    The JSON Schema meta-schema check is left to :func:`deep_tool_problems` (it costs
    milliseconds a tool, too much for every tool of a large catalog at every start).
    """
    errors: list[Problem] = []
    warnings: list[Problem] = []
    seen: set[str] = set()
    for tool in tools:
        where = f"tool {tool.name!r}"
        if tool.name.lower() in META_TOOL_NAMES:  # a case variant would read as the meta-tool
            errors.append(
                Problem(
                    f"{where} has the name of a core meta-tool; rename it "
                    f"(@tool(name='{plugin.replace('-', '_')}_{tool.name}'))",
                    PluginConflictError,
                )
            )
        if tool.name in seen:
            errors.append(
                Problem(f"registers tool {tool.name!r} twice; rename one", PluginConflictError)
            )
            continue
        seen.add(tool.name)
        try:
            tool.prepare()  # @tool builds schemas lazily: a type pydantic cannot describe shows here
        except ToolDefinitionError as error:
            errors.append(Problem(str(error)))
            continue
        errors += [
            Problem(f"{where}: {p}")
            for p in function_schema_problems(
                tool.openai_schema(), meta_schema=False, plain=plain_schema(tool)
            )
        ]
        if not simple_parameters(tool):  # simple types always validate: no model to build
            try:
                tool.validate({})
            except ToolArgumentsError:
                pass  # it has required arguments: that is what validation is for
            except Exception as error:
                errors.append(
                    Problem(
                        f"{where} cannot validate its arguments ({type(error).__name__}: "
                        f"{error}); make it with @tool"
                    )
                )
        if tool.visibility == "on-demand" and visibility != "on-demand":
            article = "an" if visibility[0] in "aeiou" else "a"
            errors.append(
                Problem(
                    f"{where} is on-demand in {article} {visibility} plugin: loading {plugin!r} "
                    "cannot show it, so the model can never call it; give it "
                    f"visibility={visibility!r} or move it to an on-demand plugin"
                )
            )
    return errors, warnings


def deep_tool_problems(tools: Sequence[Tool]) -> list[Problem]:
    """Tool parameters that are not valid JSON Schema (the slow check ``check_plugin`` adds)."""
    found: list[Problem] = []
    for tool in tools:
        shallow = set(parameters_problems(tool.parameters, meta_schema=False))
        found += [
            Problem(f"tool {tool.name!r}: {p}")
            for p in parameters_problems(tool.parameters)
            if p not in shallow
        ]
    return found
