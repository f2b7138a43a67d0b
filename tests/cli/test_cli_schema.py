"""``oracle ask --schema``: a JSON Schema inline, in a file, or in llm's concise syntax; the
model is asked for that JSON and the answer printed is it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oracle_core.cli.ask_schema import concise_schema
from oracle_core.testing.openai_server import FakeOpenAI, Reply

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def ask(fake_openai: FakeOpenAI, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORACLE_", "OPENAI_"))}
    env.update(
        ORACLE_HOME=str(home),
        ORACLE_MODEL="openai/fake-model",
        ORACLE_API_BASE=fake_openai.url,
        OPENAI_API_KEY="sk-fake",
        ORACLE_LOAD_PLUGINS="",  # no installed plugin: the schema is the subject
    )
    return subprocess.run(
        [sys.executable, "-m", "oracle_core", "ask", *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def sent_schema(fake_openai: FakeOpenAI) -> Any:
    return fake_openai.requests[0].body["response_format"]["json_schema"]["schema"]


@pytest.mark.slow
def test_an_inline_schema_is_sent_and_the_json_answer_printed(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(Reply.text('```json\n{"name": "Ada", "age": 36}\n```'))

    result = ask(fake_openai, tmp_path, "who?", "--schema", json.dumps(PERSON))

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"name": "Ada", "age": 36}
    assert sent_schema(fake_openai) == PERSON


@pytest.mark.slow
def test_a_schema_file_is_read(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    (tmp_path / "person.json").write_text(json.dumps(PERSON), encoding="utf-8")
    fake_openai.script(Reply.text('{"name": "Ada", "age": 36}'))

    result = ask(fake_openai, tmp_path, "who?", "--schema", str(tmp_path / "person.json"))

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"name": "Ada", "age": 36}
    assert sent_schema(fake_openai) == PERSON


@pytest.mark.slow
def test_the_concise_syntax_is_a_schema_of_an_object(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(Reply.text('{"name": "Ada", "age": 36, "bio": "A mathematician."}'))

    result = ask(fake_openai, tmp_path, "who?", "--schema", "name, age int, bio: their biography")

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["bio"] == "A mathematician."
    assert sent_schema(fake_openai)["properties"]["bio"] == {
        "type": "string",
        "description": "their biography",
    }


@pytest.mark.slow
def test_an_answer_still_wrong_after_its_repair_turn_exits_1_saying_why(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(Reply.text('{"name": "Ada"}'), Reply.text('{"name": "Ada"}'))

    result = ask(fake_openai, tmp_path, "who?", "--schema", "name, age int")

    assert result.returncode == 1
    assert "output schema 'output'" in result.stderr
    assert "'age' is a required property" in result.stderr
    assert len(fake_openai.requests) == 2


@pytest.mark.slow
def test_a_schema_that_is_not_json_schema_is_a_usage_error_before_any_request(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    result = ask(fake_openai, tmp_path, "who?", "--schema", '{"type": "object", "properties": 5}')

    assert result.returncode == 2
    assert (
        "Invalid value for --schema: the output schema is not a valid JSON Schema" in result.stderr
    )
    assert "at $.properties: 5 is not of type 'object'" in result.stderr
    assert fake_openai.requests == []


def test_concise_fields_are_required_strings_unless_typed() -> None:
    assert concise_schema("name, age int, score float, ok bool, bio: their biography") == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "score": {"type": "number"},
            "ok": {"type": "boolean"},
            "bio": {"type": "string", "description": "their biography"},
        },
        "required": ["name", "age", "score", "ok", "bio"],
    }


def test_concise_fields_on_lines_may_hold_commas_in_their_description() -> None:
    schema = concise_schema("name\nbio: who they are, in short\n")

    assert schema["properties"]["bio"]["description"] == "who they are, in short"
    assert schema["required"] == ["name", "bio"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("age integer", "not one of str, int, float, bool"),
        ("a b c", "write it as"),
        (" , ", "no field"),
    ],
    ids=["unknown-type", "three-words", "empty"],
)
def test_a_concise_schema_that_does_not_parse_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        concise_schema(text)
