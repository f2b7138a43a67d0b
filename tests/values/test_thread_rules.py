"""The pure rules of a thread's records that every store applies (interrupting, tails)."""

from __future__ import annotations

from oracle_core.values.threads import (
    INTERRUPTED_ERROR,
    RunRecord,
    ThreadState,
    interrupted,
    tail_of,
)


def test_an_interrupted_run_says_why_unless_it_already_had_an_error() -> None:
    run = RunRecord("run_1", "t", created_at=1.0, updated_at=1.0)

    marked = interrupted(run, 5.0)
    kept = interrupted(RunRecord("run_2", "t", error="boom"), 5.0)

    assert (marked.status, marked.updated_at, marked.error) == (
        "interrupted",
        5.0,
        INTERRUPTED_ERROR,
    )
    assert kept.error == "boom"
    assert run.status == "running"  # a copy: the record read is left as it was


def test_the_tail_of_a_thread_holds_what_came_after_and_the_message_before() -> None:
    messages = [{"role": "user", "content": str(i)} for i in range(3)]
    runs = [RunRecord("a", "t", status="completed"), RunRecord("b", "t")]
    state = ThreadState("t", messages=messages, runs=runs, message_tokens=[1, 2, 3])

    tail = tail_of(state, 2)

    assert (tail.messages, tail.message_tokens, tail.count) == (messages[2:], [3], 3)
    assert tail.before == messages[1]
    assert [r.id for r in tail.running] == ["b"]


def test_a_tail_past_the_end_of_a_shrunk_thread_holds_nothing() -> None:
    state = ThreadState("t", messages=[{"role": "user", "content": "x"}], message_tokens=[1])

    tail = tail_of(state, 5)

    assert (tail.messages, tail.before, tail.count) == ([], None, 1)
