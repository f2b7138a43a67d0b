"""Observers of runs (run/observe.py): each sees every event of every run in order, and one
that fails is left out of the run without changing it."""

from __future__ import annotations

import logging

import pytest
from conftest import MakeOracle
from support import CodePlugin

from oracle_core.plugins.registry import Registry
from oracle_core.run.state import RunState
from oracle_core.testing.openai_server import FakeOpenAI, Reply
from oracle_core.values.events import Event


class Seen:
    """Records the type of every event it is told of, with its run id."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def observe(self, registry: Registry, state: RunState, event: Event) -> None:
        self.events.append((state.record.id, event.type))


class Broken:
    """Fails on the ``fail_on``-th event it is told of, then counts what it is told."""

    def __init__(self, fail_on: int) -> None:
        self.fail_on, self.told = fail_on, 0

    def observe(self, registry: Registry, state: RunState, event: Event) -> None:
        self.told += 1
        if self.told == self.fail_on:
            raise RuntimeError("the exporter broke")


def test_an_observer_sees_each_event_the_caller_sees_in_order(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    seen = Seen()
    oracle = make_oracle(CodePlugin("notes", visibility="always"), observers=[seen])
    fake_openai.script(Reply.call("notes_tool", {"text": "x"}), Reply.text("done"))

    async def drive() -> list[str]:
        try:
            return [e.type async for e in oracle.stream("t", "write it")]
        finally:
            await oracle.close()  # on this loop: its model's client belongs to it

    import asyncio

    streamed = asyncio.run(drive())

    assert [kind for _, kind in seen.events] == streamed
    assert streamed[0] == "run_started" and streamed[-1] == "done"
    assert "tool_call" in streamed and "tool_result" in streamed
    assert len({run for run, _ in seen.events}) == 1


@pytest.mark.parametrize("fail_on", [1, 2, 4, 6])
def test_a_failing_observer_is_logged_once_and_the_run_and_other_observers_go_on(
    make_oracle: MakeOracle,
    fake_openai: FakeOpenAI,
    fail_on: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken, seen = Broken(fail_on), Seen()
    oracle = make_oracle(CodePlugin("notes", visibility="always"), observers=[broken, seen])
    fake_openai.script(Reply.call("notes_tool", {"text": "x"}), Reply.text("done"))

    with caplog.at_level(logging.ERROR, logger="oracle_core.run"):
        result = oracle.run_sync("t", "write it")

    assert result.status == "completed" and result.answer == "done"
    assert broken.told == fail_on  # never told again in that run
    assert seen.events[-1][1] == "done" and len(seen.events) >= 6
    failures = [r for r in caplog.records if "observer Broken failed" in r.getMessage()]
    assert len(failures) == 1


class Statuses:
    """Records each run's last event's status."""

    def __init__(self) -> None:
        self.finished: list[str] = []

    def observe(self, registry: Registry, state: RunState, event: Event) -> None:
        if event.type == "done":
            self.finished.append(state.record.status)


def test_a_run_its_caller_stops_reading_is_still_seen_to_finish_as_cancelled(
    make_oracle: MakeOracle, fake_openai: FakeOpenAI
) -> None:
    import asyncio

    seen = Statuses()
    oracle = make_oracle(CodePlugin("notes", visibility="always"), observers=[seen])
    fake_openai.script(Reply.call("notes_tool", {"text": "x"}), Reply.text("done"))

    async def drive() -> None:
        stream = oracle.stream("t", "write it")
        async for event in stream:
            if event.type == "tool_call":
                break  # stop reading mid-run
        await stream.aclose()  # type: ignore[attr-defined]
        await oracle.close()  # on this loop: its model's client belongs to it

    asyncio.run(drive())

    assert seen.finished == ["cancelled"]
