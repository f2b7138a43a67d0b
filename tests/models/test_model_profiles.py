"""The server table: each kind of model server is known by its model string, and its row's
deviations are what the request builder sends and the stream assembler reads.

Every row of :data:`PROFILES` (and the fallback row) is checked here, parametrized over the
table: a new row or a new column fails these tests until its case is added.
"""

from __future__ import annotations

from typing import Any

import pytest

from oracle_core import ModelRequest
from oracle_core.models.litellm import LiteLLMModel
from oracle_core.models.openai import OpenAIModel
from oracle_core.models.profiles import OPENAI_COMPATIBLE, PROFILES, ServerProfile, profile_for
from oracle_core.models.wire import StreamAssembler, wire_messages

ROWS = (*PROFILES, OPENAI_COMPATIBLE)

PLACED: dict[str, list[tuple[str, str | None]]] = {
    "llama.cpp": [("openai/qwen", "http://127.0.0.1:8080/v1")],
    "Ollama": [("ollama/llama3", None), ("ollama_chat/qwen", None), ("openai/x", "http://h:11434")],
    "vLLM": [("hosted_vllm/meta/llama", "http://gpu:9000"), ("openai/x", "http://gpu:8000/v1")],
    "LM Studio": [("lm_studio/qwen", None), ("openai/x", "http://localhost:1234/v1")],
    "OpenAI": [("gpt-4o", None), ("openai/gpt-4o-mini", None), ("openai/o3", None)],
    "Anthropic (through litellm)": [("anthropic/claude-3-5", None), ("claude-sonnet-4", None)],
    "OpenAI-compatible server": [
        ("openai/gpt-4o", "http://127.0.0.1:5000/v1"),
        ("openai/local", None),
        ("mistral/mistral-large", None),
        ("openai/x", "not a url:"),
        ("openai/claude-3-5", None),  # a proxy's name: only the bare name is Anthropic's
        ("openai/gpt-4o", "http://[::1"),
    ],
}
"""Model strings (and ``api_base``) that reach each row: every row needs at least one."""


def test_every_row_has_a_name_of_its_own_and_model_strings_that_reach_it() -> None:
    names = [row.name for row in ROWS]

    assert len(set(names)) == len(names)
    assert sorted(PLACED) == sorted(names)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.name)
def test_a_model_string_of_a_server_finds_its_row(row: ServerProfile) -> None:
    for model, api_base in PLACED[row.name]:
        assert profile_for(model, api_base) is row, (model, api_base)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.name)
def test_a_provider_model_reads_the_row_of_its_server(row: ServerProfile) -> None:
    model, api_base = PLACED[row.name][0]

    assert LiteLLMModel(model, api_base=api_base).profile is row
    assert OpenAIModel(model, api_base=api_base).profile is row


def _request(*messages: dict[str, Any]) -> ModelRequest:
    return ModelRequest("t", "r", 1, "m", "system", messages, ())


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.name)
def test_a_tool_only_assistant_message_is_sent_with_the_content_its_server_takes(
    row: ServerProfile,
) -> None:
    asked = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    history = (
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [asked]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "said"},
    )

    sent = wire_messages(_request(*history), row)

    assert sent[2] == {"role": "assistant", "content": row.tool_only_content, "tool_calls": [asked]}
    assert sent[4]["content"] == "said"  # a message with text is sent as it is


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.name)
def test_a_streamed_name_said_again_is_read_as_its_server_sends_names(row: ServerProfile) -> None:
    answer = StreamAssembler(None, row)
    for pieces in (
        {"index": 0, "id": "c1", "function": {"name": "echo", "arguments": ""}},
        {"index": 0, "function": {"name": "echo", "arguments": '{"a":'}},
        {"index": 0, "function": {"name": "echo", "arguments": " 1}"}},
    ):
        answer.add({"choices": [{"index": 0, "delta": {"tool_calls": [pieces]}}]})

    (call,) = answer.response().tool_calls

    assert call["function"]["name"] == ("echo" if row.repeats_call_name else "echoechoecho")
    assert call["function"]["arguments"] == '{"a": 1}'


def test_a_server_the_table_cannot_place_is_assumed_to_have_every_known_deviation() -> None:
    assert OPENAI_COMPATIBLE.repeats_call_name
    assert OPENAI_COMPATIBLE.tool_only_content == ""
    assert all(row.tool_only_content == "" for row in ROWS)  # what every request sends today
