"""The SSE wire format, and the pings that keep a quiet stream open."""

from __future__ import annotations

from oracle_core.server.runs import _END, RunHandle
from oracle_core.server.sse import PING, run_stream, sse_message
from oracle_core.values.events import RunFinished, RunStarted, TextDelta
from oracle_core.values.messages import Usage


def test_an_sse_message_is_an_event_line_and_one_compact_json_data_line() -> None:
    message = sse_message({"type": "text_delta", "text": "two\nlines"}, "text_delta")

    assert message == b'event: text_delta\ndata: {"type":"text_delta","text":"two\\nlines"}\n\n'


async def test_a_quiet_run_sends_pings_until_its_next_event() -> None:
    handle = RunHandle("t")
    stream = run_stream(handle, RunStarted("run_1", "t"), ping_seconds=0.01)

    first = await anext(stream)
    quiet = await anext(stream)  # nothing is queued, so only a ping can come
    handle.put(TextDelta("Hi"))
    handle.put(RunFinished("run_1", "completed", "Hi", Usage(3, 1)))
    handle.put(_END)
    rest = b"".join([chunk async for chunk in stream if chunk != PING])

    assert first.startswith(b"event: run_started\n")
    assert quiet == PING == b": ping\n\n"
    assert rest.startswith(b"event: text_delta\ndata: ")
    assert [line for line in rest.split(b"\n") if line.startswith(b"event:")] == [
        b"event: text_delta",
        b"event: done",
    ]
