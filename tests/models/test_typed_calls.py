"""Tool calls are typed values: a model's reply carries ToolCalls, the run loop reads them,
and the OpenAI shape is built and read in models/wire.py alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracle_core import ModelResponse, ToolCall, ToolResult
from oracle_core.models.wire import (
    StreamAssembler,
    assistant_message,
    call_entry,
    calls_of,
    reply_message,
    response_from,
    saved_reply,
    tool_call,
    tool_message,
    typed,
)

RUN = Path(__file__).resolve().parents[2] / "oracle_core" / "run"


def test_a_streamed_reply_carries_its_calls_as_typed_values_beside_the_message() -> None:
    answer = StreamAssembler()
    answer.add({"choices": [{"delta": {"content": "Let me look."}}]})
    for piece in (
        {"index": 0, "id": "c1", "function": {"name": "lookup", "arguments": '{"q":'}},
        {"index": 0, "function": {"arguments": ' "x"}'}},
        {"index": 1, "id": "c2", "function": {"name": "now", "arguments": ""}},
    ):
        answer.add({"choices": [{"delta": {"tool_calls": [piece]}}]})
    answer.add({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]})

    response = answer.response()

    assert response.calls == (ToolCall("c1", "lookup", '{"q": "x"}'), ToolCall("c2", "now", ""))
    assert response.tool_calls == [call_entry(c) for c in response.calls]
    assert response.message == reply_message("Let me look.", response.calls)
    assert [c.decoded for c in response.calls] == [{"q": "x"}, {}]


def test_a_whole_completion_carries_typed_calls() -> None:
    entry = tool_call("lookup", {"q": 1}, "c9")
    completion = {"choices": [{"message": {"content": None, "tool_calls": [entry]}}]}

    response = response_from(completion)

    assert response.calls == (ToolCall("c9", "lookup", '{"q": 1}'),)
    assert response.message == assistant_message(None, [entry])


def test_a_response_made_from_a_message_alone_gets_its_calls_read_from_it() -> None:
    entries = [
        tool_call("lookup", "{}", "c1"),
        {"id": 7, "function": {"name": "count", "arguments": {"n": 2}}},
        "not a call",
    ]
    response = ModelResponse(assistant_message(None, entries))  # as a middleware may answer

    read = typed(response)

    assert response.calls == ()
    assert read.calls == (ToolCall("c1", "lookup", "{}"), ToolCall("7", "count", '{"n": 2}'))
    assert read.message is response.message  # what is saved is what was given
    assert typed(read) is read
    assert typed(ModelResponse(assistant_message("hi", None))).calls == ()


def test_the_calls_a_run_acts_on_are_those_of_the_message_a_middleware_left() -> None:
    import dataclasses

    model_said = response_from(
        {"choices": [{"message": {"tool_calls": [tool_call("delete", "{}", "c1")]}}]}
    )
    changed = dataclasses.replace(  # a middleware that drops the call from the message
        model_said, message=assistant_message("I will not.", None)
    )

    assert typed(model_said) is model_said
    assert typed(changed).calls == ()


@pytest.mark.parametrize(
    ("arguments", "decoded"),
    [("", {}), ("  ", {}), ('{"a": [1]}', {"a": [1]}), ("[1]", None), ("{", None), ("3", None)],
)
def test_a_call_decodes_its_arguments_to_a_json_object_or_none(
    arguments: str, decoded: object
) -> None:
    assert ToolCall("c", "t", arguments).decoded == decoded


def test_a_call_is_bound_to_its_thread_and_run_only_by_the_run() -> None:
    call = ToolCall("c", "t", "{}")

    bound = call.replace(thread_id="th", run_id="r", user_id="ana")

    assert (call.thread_id, call.run_id) == ("", "")
    assert (bound.id, bound.name, bound.thread_id, bound.run_id) == ("c", "t", "th", "r")


def test_the_saved_reply_caps_its_text_and_replaces_arguments_over_the_limit() -> None:
    long = json.dumps({"text": "y" * 50})
    entries = [tool_call("short", "{}", "c1"), tool_call("long", long, "c2")]
    response = typed(ModelResponse(assistant_message("z" * 30, entries)))

    saved = saved_reply(response, lambda text: text[:5], lambda text: len(text) > 20)

    assert saved["content"] == "zzzzz"
    assert saved["tool_calls"][0] == entries[0]
    assert json.loads(saved["tool_calls"][1]["function"]["arguments"]) == {
        "_dropped": f"{len(long)} characters of arguments"
    }
    assert response.message["tool_calls"] == entries  # the response itself is unchanged


def test_a_tool_result_is_sent_back_as_a_tool_message() -> None:
    result = ToolResult("c1", "lookup", '{"ok": true}', is_error=False)

    assert tool_message(result) == {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'}
    assert tool_message(result) == result.message()  # the method middleware may still call


def test_calls_are_read_from_saved_messages_in_the_same_shape_they_are_saved() -> None:
    calls = (ToolCall("c1", "a", "{}"), ToolCall("c2", "b", '{"x": 1}'))

    assert calls_of(reply_message(None, calls)) == calls


@pytest.mark.parametrize("module", ["loop.py", "asking.py"])
def test_the_run_loop_picks_no_tool_call_dict_apart(module: str) -> None:
    source = (RUN / module).read_text(encoding="utf-8")

    assert '"tool_calls"' not in source
    assert '"function"' not in source
    assert '["id"]' not in source
