"""Structured output: the final answer is JSON for the caller's schema, or the run says why.

``oracle.run(..., output_type=Model)`` (a pydantic model class or a JSON Schema) asks the
model for that JSON (``response_format``), checks the answer, gives a wrong one exactly one
repair turn, and returns the parsed value as ``RunResult.output``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import MakeOracle
from pydantic import BaseModel, field_validator
from waits_support import FunctionModel, build_oracle, text

from oracle_core import (
    ModelRequest,
    ModelResponse,
    OutputSchema,
    OutputSchemaError,
    OutputValidationError,
    RunOptions,
    TextDelta,
)
from oracle_core.models.openai import OpenAIModel
from oracle_core.testing.openai_server import FakeOpenAI, Reply


class Person(BaseModel):
    name: str
    age: int


PERSON_SCHEMA = {
    "title": "person",
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def answers(*replies: str) -> Callable[[ModelRequest], ModelResponse]:
    """A model answering ``replies`` in turn, one per request."""
    left = list(replies)
    return lambda request: text(left.pop(0))


def last_message(request: ModelRequest) -> str:
    return str(request.messages[-1]["content"])


async def test_a_valid_answer_is_parsed_into_the_pydantic_model(db: Path) -> None:
    model = FunctionModel(answers('{"name": "Ada", "age": 36}'))
    async with build_oracle(db, model=model) as oracle:
        result = await oracle.run("t", "who wrote the first program?", output_type=Person)

    assert result.status == "completed", result.error
    assert result.output == Person(name="Ada", age=36)
    assert json.loads(result.answer) == {"name": "Ada", "age": 36}
    assert len(model.requests) == 1


async def test_a_json_schema_gives_the_parsed_json_value(db: Path) -> None:
    model = FunctionModel(answers('{"name": "Ada", "age": 36}'))
    async with build_oracle(db, model=model) as oracle:
        result = await oracle.run("t", "who?", output_type=PERSON_SCHEMA)

    assert result.output == {"name": "Ada", "age": 36}
    assert result.to_json()["output"] == {"name": "Ada", "age": 36}


async def test_the_model_is_asked_for_the_schema_with_response_format(db: Path) -> None:
    model = FunctionModel(answers('{"name": "Ada", "age": 36}'))
    async with build_oracle(db, model=model) as oracle:
        await oracle.run("t", "who?", output_type=PERSON_SCHEMA)

    assert model.requests[0].options["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "person", "schema": PERSON_SCHEMA, "strict": False},
    }


async def test_an_answer_in_a_json_code_fence_is_accepted(db: Path) -> None:
    model = FunctionModel(answers('```json\n{"name": "Ada", "age": 36}\n```\n'))
    async with build_oracle(db, model=model) as oracle:
        result = await oracle.run("t", "who?", output_type=Person)

    assert result.status == "completed", result.error
    assert result.output == Person(name="Ada", age=36)
    assert result.answer == '{"name": "Ada", "age": 36}'  # the JSON, without its fence
    assert len(model.requests) == 1  # no repair turn


async def test_a_wrong_answer_gets_one_repair_turn_that_says_what_is_wrong(db: Path) -> None:
    model = FunctionModel(
        answers('{"name": "Ada", "age": "thirty-six"}', '{"name": "Ada", "age": 36}')
    )
    async with build_oracle(db, model=model) as oracle:
        result = await oracle.run("t", "who?", output_type=Person)

    assert result.status == "completed", result.error
    assert result.output == Person(name="Ada", age=36)
    assert len(model.requests) == 2
    repair = model.requests[1].messages[-1]
    assert repair["role"] == "user"
    assert repair["content"].startswith(
        "Your answer is not valid for the output schema 'Person': at $.age: 'thirty-six' is "
        "not of type 'integer'. Reply with only the JSON, no other text and no code fence: "
        "JSON valid for this schema:\n{"
    )
    assert model.requests[1].messages[-2]["content"] == '{"name": "Ada", "age": "thirty-six"}'


async def test_an_answer_that_is_not_json_is_told_so_in_the_repair_turn(db: Path) -> None:
    model = FunctionModel(answers("Ada, 36", '{"name": "Ada", "age": 36}'))
    async with build_oracle(db, model=model) as oracle:
        result = await oracle.run("t", "who?", output_type=Person)

    assert result.status == "completed", result.error
    assert "'Person': it is not JSON (Expecting value" in last_message(model.requests[1])


async def test_a_refusal_by_the_models_own_validator_gets_a_repair_turn(db: Path) -> None:
    class Adult(BaseModel):
        age: int

        @field_validator("age")
        @classmethod
        def grown(cls, age: int) -> int:
            if age < 18:
                raise ValueError("an adult is 18 or older")
            return age

    model = FunctionModel(answers('{"age": 9}', '{"age": 40}'))
    async with build_oracle(db, model=model) as oracle:
        result = await oracle.run("t", "an age?", output_type=Adult)

    assert result.output == Adult(age=40)
    assert "at $.age: Value error, an adult is 18 or older" in last_message(model.requests[1])


async def test_a_still_wrong_answer_fails_the_run_naming_the_schema_and_the_problem(
    db: Path,
) -> None:
    model = FunctionModel(answers('{"name": "Ada"}', '{"name": "Ada"}', "Hello again."))
    async with build_oracle(db, model=model) as oracle:
        failed = await oracle.run("t", "who?", output_type=Person)
        asked = len(model.requests)
        saved = await oracle.checkpointer.load("t")
        after = await oracle.run("t", "just say hello")

    assert failed.status == "failed"
    assert failed.output is None
    assert failed.error == str(
        OutputValidationError(schema="Person", problem="at $: 'age' is a required property")
    )
    assert asked == 2  # exactly one repair turn
    assert [m["role"] for m in saved.messages] == ["user", "assistant", "user", "assistant"]
    assert saved.messages[-1]["content"] == '{"name": "Ada"}'  # the last answer is kept
    assert after.status == "completed" and after.answer == "Hello again."


def test_the_validation_error_names_the_schema_and_the_problem() -> None:
    error = OutputValidationError(schema="Person", problem="at $: 'age' is a required property")

    assert isinstance(error, ValueError)
    assert "output schema 'Person'" in str(error)
    assert "at $: 'age' is a required property" in str(error)


async def test_a_schema_that_is_not_json_schema_is_refused_before_anything_runs(db: Path) -> None:
    model = FunctionModel(answers("{}"))
    async with build_oracle(db, model=model) as oracle:
        with pytest.raises(OutputSchemaError, match=r"at \$\.properties: 5 is not of type"):
            await oracle.run("t", "hi", output_type={"type": "object", "properties": 5})
        saved = await oracle.checkpointer.load("t")

    assert model.requests == [] and list(saved.messages) == []


async def test_json_object_mode_takes_any_object_and_refuses_a_list(db: Path) -> None:
    model = FunctionModel(answers("[1, 2]", '{"any": "thing"}'))
    async with build_oracle(db, model=model) as oracle:
        result = await oracle.run("t", "hi", options=RunOptions(output=OutputSchema.json_object()))

    assert result.output == {"any": "thing"}
    assert model.requests[0].options["response_format"] == {"type": "json_object"}
    assert "at $: [1, 2] is not of type 'object'" in last_message(model.requests[1])


async def test_a_callers_own_response_format_is_sent_as_given(db: Path) -> None:
    model = FunctionModel(answers('{"name": "Ada", "age": 36}'))
    options = RunOptions(model_options={"response_format": {"type": "json_object"}})
    async with build_oracle(db, model=model) as oracle:
        result = await oracle.run("t", "who?", options=options, output_type=Person)

    assert model.requests[0].options["response_format"] == {"type": "json_object"}
    assert result.output == Person(name="Ada", age=36)


async def test_the_finished_event_carries_the_parsed_output(db: Path) -> None:
    model = FunctionModel(answers('{"name": "Ada", "age": 36}'))
    async with build_oracle(db, model=model) as oracle:
        events = [e async for e in oracle.stream("t", "who?", output_type=Person)]

    assert events[-1].to_json()["output"] == {"name": "Ada", "age": 36}


async def test_a_streamed_run_yields_only_the_checked_answer_not_the_wrong_one(db: Path) -> None:
    model = FunctionModel(answers('{"name": "Ada"}', '{"name": "Ada", "age": 36}'))
    async with build_oracle(db, model=model) as oracle:
        events = [e async for e in oracle.stream("t", "who?", output_type=Person)]

    assert [e for e in events if isinstance(e, TextDelta)] == []
    assert events[-1].to_json()["answer"] == '{"name": "Ada", "age": 36}'


def test_an_openai_response_format_names_the_output_it_asks_for() -> None:
    wanted = OutputSchema.from_response_format(
        {
            "type": "json_schema",
            "json_schema": {"name": "p", "schema": PERSON_SCHEMA, "strict": True},
        }
    )

    assert wanted is not None and wanted.name == "p" and wanted.strict
    assert dict(wanted.schema) == PERSON_SCHEMA
    assert OutputSchema.from_response_format({"type": "text"}) is None


@pytest.mark.parametrize("client", ["litellm", "openai"])
async def test_response_format_reaches_the_provider_in_the_http_body(
    fake_openai: FakeOpenAI, make_oracle: MakeOracle, client: str
) -> None:
    fake_openai.script(Reply.text('{"name": "Ada", "age": 36}'))
    model = (
        fake_openai.model()
        if client == "litellm"
        else OpenAIModel("openai/fake", api_base=fake_openai.url, api_key="sk-fake")
    )
    oracle = make_oracle(model=model)

    result = await oracle.run("t", "who?", output_type=Person)

    assert result.output == Person(name="Ada", age=36)
    [seen] = fake_openai.requests
    assert seen.body["response_format"]["type"] == "json_schema"
    assert seen.body["response_format"]["json_schema"]["name"] == "Person"
    assert seen.body["response_format"]["json_schema"]["schema"] == Person.model_json_schema()
