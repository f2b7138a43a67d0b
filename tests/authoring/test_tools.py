"""``@tool`` turns typed functions into tools with a JSON schema and validated arguments."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel

from oracle_core import ToolArgumentsError, ToolContext, ToolDefinitionError, tool


@tool
def forecast(city: str, days: int = 3, units: Literal["metric", "imperial"] = "metric") -> str:
    """Get the weather forecast for a city.

    Args:
        city: Place name, e.g. "Lisbon".
        days: How many days ahead,
            between 1 and 7.
        units: Unit system.
    """
    return f"{city}:{days}:{units}"


def test_name_description_and_schema_come_from_the_function() -> None:
    assert forecast.name == "forecast"
    assert forecast.description == "Get the weather forecast for a city."
    assert forecast.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": 'Place name, e.g. "Lisbon".'},
            "days": {
                "type": "integer",
                "default": 3,
                "description": "How many days ahead, between 1 and 7.",
            },
            "units": {
                "type": "string",
                "enum": ["metric", "imperial"],
                "default": "metric",
                "description": "Unit system.",
            },
        },
        "required": ["city"],
        "additionalProperties": False,
    }


def test_openai_schema_is_a_function_definition() -> None:
    schema = forecast.openai_schema()

    assert schema["type"] == "function"
    assert schema["function"]["name"] == "forecast"
    assert schema["function"]["parameters"] is forecast.parameters


async def test_arguments_are_validated_and_coerced_before_the_call() -> None:
    assert await forecast.call({"city": "Oslo", "days": "2"}) == "Oslo:2:metric"


async def test_invalid_arguments_name_every_bad_field_and_never_call_the_function() -> None:
    with pytest.raises(ToolArgumentsError) as caught:
        await forecast.call({"days": "many", "colour": "red"})

    message = str(caught.value)
    assert message.startswith("invalid arguments for forecast:")
    assert "city: Field required" in message
    assert "days: Input should be a valid integer" in message
    assert "colour: Extra inputs are not permitted" in message


async def test_async_functions_become_tools() -> None:
    @tool
    async def shout(text: str) -> str:
        """Shout the text."""
        return text.upper()

    assert shout.is_async
    assert await shout.call({"text": "hi"}) == "HI"


async def test_a_context_parameter_is_passed_in_and_left_out_of_the_schema() -> None:
    @tool
    def whoami(ctx: ToolContext, greeting: str = "hi") -> str:
        """Say who is calling."""
        return f"{greeting} {ctx.user_id} on {ctx.thread_id} via {ctx.plugin}"

    assert list(whoami.parameters["properties"]) == ["greeting"]
    context = ToolContext(thread_id="t1", plugin="me", user_id="ana")
    assert await whoami.call({}, context) == "hi ana on t1 via me"


def test_overrides_set_name_description_and_visibility() -> None:
    @tool(name="get_time", description="Current time.", visibility="always")
    def clock() -> str:
        return "noon"

    assert (clock.name, clock.description, clock.visibility) == (
        "get_time",
        "Current time.",
        "always",
    )


class Point(BaseModel):
    x: float
    y: float


def test_pydantic_models_are_accepted_as_parameters() -> None:
    @tool
    def distance(a: Point, b: Point) -> float:
        """Distance between two points."""
        return float(((a.x - b.x) ** 2 + (a.y - b.y) ** 2) ** 0.5)

    assert distance.parameters["properties"]["a"] == {"$ref": "#/$defs/Point"}
    assert distance.parameters["$defs"]["Point"]["required"] == ["x", "y"]
    assert "title" not in distance.parameters["$defs"]["Point"]


def test_a_parameter_without_a_type_hint_is_refused_with_the_fix_on_first_need() -> None:
    @tool
    def bad(city) -> str:  # type: ignore[no-untyped-def]
        """Bad."""
        return str(city)

    # Decorating reads no signature (a warm start reads none); the validator and the
    # first request or call do, and every one of them gets the same error.
    for attempt in (bad.prepare, lambda: bad.parameters, lambda: bad.validate({"city": "x"})):
        with pytest.raises(
            ToolDefinitionError, match="parameter 'city' has no type hint: annotate"
        ):
            attempt()


def test_decorating_reads_no_signature_and_no_type_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    import inspect
    import typing

    read: list[str] = []
    signature, hints = inspect.signature, typing.get_type_hints
    monkeypatch.setattr(
        inspect, "signature", lambda fn, **kw: read.append("sig") or signature(fn, **kw)
    )
    monkeypatch.setattr(
        typing, "get_type_hints", lambda fn, **kw: read.append("hints") or hints(fn, **kw)
    )

    @tool
    def where(city: str, ctx: ToolContext) -> str:
        """Where a city is."""
        return city

    assert read == []
    assert where.description == "Where a city is."
    # First need: the hints are resolved once (a plain function's parameters are read
    # off its code object, without inspect.signature).
    assert where.context_parameter == "ctx"
    assert read == ["hints"]
    assert list(where.parameters["properties"]) == ["city"]
    assert read == ["hints"]


def test_a_tool_without_a_description_is_refused_with_the_fix() -> None:
    with pytest.raises(ToolDefinitionError, match=r"has no description: add a docstring"):

        @tool
        def silent(x: int) -> int:
            return x


def test_an_unknown_visibility_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="visibility must be one of"):
        tool(visibility="hidden")(forecast.function)  # type: ignore[arg-type]


def test_an_optional_or_annotated_context_never_reaches_the_schema() -> None:
    @tool
    def a(x: int, ctx: ToolContext | None = None) -> int:
        """A."""
        return x

    @tool
    def b(x: int, ctx: Annotated[ToolContext, "the call"]) -> int:
        """B."""
        return x

    assert list(a.parameters["properties"]) == ["x"]
    assert list(b.parameters["properties"]) == ["x"]


def test_decorating_builds_no_schema_until_one_is_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    import oracle_core.authoring.tools.schema

    built: list[str] = []
    real = oracle_core.authoring.tools.schema.create_model
    monkeypatch.setattr(
        oracle_core.authoring.tools.schema,
        "create_model",
        lambda name, /, **kw: built.append(name) or real(name, **kw),
    )

    @tool
    def pick(choice: Literal["a", "b"]) -> str:
        """Pick one."""
        return choice

    assert built == []
    assert pick.parameters["properties"]["choice"]["enum"] == ["a", "b"]
    assert pick.validate({"choice": "a"}) == {"choice": "a"}
    assert built == ["pick_arguments"]  # once, shared by the schema and validation


@pytest.mark.parametrize(
    ("hint", "default"),
    [
        (str, ...),
        (int, 3),
        (float, 1.5),
        (bool, True),
        (list[str], ...),
        (dict[str, int], None),
        (str | None, None),
        (None | int, None),
        (list[float] | None, None),
        (dict[str, list[bool]], ...),
        (str, "x"),
    ],
)
@pytest.mark.parametrize("described", [True, False])
def test_simple_parameters_get_exactly_the_schema_pydantic_writes(
    hint: object, default: object, described: bool
) -> None:
    import json

    from pydantic import ConfigDict, Field, create_model

    from oracle_core.authoring.tools.schema import Arguments as _Arguments
    from oracle_core.authoring.tools.schema import strip_titles as _strip_titles
    from oracle_core.authoring.tools.signature import Parameter as _Parameter

    description = "What it is." if described else None
    arguments = _Arguments("t", "tool 't'", [_Parameter("p", hint, default, description)])
    model = create_model(
        "t",
        __config__=ConfigDict(extra="forbid"),
        p=(hint, Field(default, description=description)),
    )

    assert arguments.simple
    assert json.dumps(arguments.schema()) == json.dumps(_strip_titles(model.model_json_schema()))


def test_a_type_pydantic_cannot_describe_is_reported_naming_the_parameter() -> None:
    class Opaque:
        pass

    def find(where: Opaque) -> str:
        """Find it."""
        return ""

    find.__annotations__ = {"where": Opaque, "return": str}
    made = tool(find)  # cheap: the schema is built on first need

    with pytest.raises(
        ToolDefinitionError, match=r"parameter 'where' has type .*Opaque, which pydantic cannot"
    ):
        made.prepare()
    with pytest.raises(ToolDefinitionError, match="parameter 'where'"):
        made.parameters  # noqa: B018 - the same error again, not a rebuild
