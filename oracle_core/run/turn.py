"""How a run begins: its first step, and the ordinary one, a new turn.

Every run is the same loop over a :class:`~oracle_core.run.state.RunState` and
:class:`~oracle_core.run.deps.RunDeps`; what differs is its :class:`FirstStep`. A new
turn reads the thread and saves the user's message (:class:`NewTurn`); a resumed run
claims its settled operation and answers the call that waited
(:class:`~oracle_core.run.waits.resume.ResumeStep`). Either way the loop then asks the
model, unless the first step ended the run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

from oracle_core.errors import ThreadConflictError
from oracle_core.run.deps import RunDeps
from oracle_core.run.opening import OpenedOperations
from oracle_core.run.saving import interrupted_results, save
from oracle_core.run.state import RunState
from oracle_core.store.base import INTERRUPTED_ERROR
from oracle_core.values.attachments import user_content
from oracle_core.values.events import Event
from oracle_core.values.messages import Message
from oracle_core.values.threads import RunRecord


class FirstStep(Protocol):
    """What a run does first, with its thread held (lock and lease) by then."""

    @property
    def public(self) -> bool:
        """Whether the thread's followers see this run's events (a resume: once claimed)."""

    async def open(self, deps: RunDeps, state: RunState) -> None:
        """Read the thread into ``state`` and save what opens the run."""

    def answer(self, deps: RunDeps, state: RunState) -> AsyncIterator[Event]:
        """The events of what the run does before asking the model.

        A step that ends the run leaves ``state.running`` false (completed, waiting again,
        cancelled); otherwise the model steps follow.
        """

    async def close(self, deps: RunDeps, state: RunState, failure: str | None) -> None:
        """After the run's steps ended (``failure``: why they raised, else ``None``)."""


class NewTurn:
    """The first step of a run of a user message: open the thread, save the message."""

    public = True  # every new turn is its thread's to tell

    async def open(self, deps: RunDeps, state: RunState) -> None:
        """Load the thread, close what a dead run left open, and save the user's message."""
        user: Message = {"role": "user", "content": user_content(state.message, state.attachments)}
        await open_run(
            deps,
            state,
            lambda found: [*interrupted_results(state.messages), *found.messages(), user],
        )

    async def answer(self, deps: RunDeps, state: RunState) -> AsyncIterator[Event]:
        """Nothing: a new turn's first step is the model's."""
        return
        yield  # an async generator that yields nothing

    async def close(self, deps: RunDeps, state: RunState, failure: str | None) -> None:
        """Nothing to close: the run's record says how it ended."""


ThreadReader = Callable[[RunDeps, RunState], Awaitable[list[RunRecord]]]
"""Reads the thread into a run's state; returns its runs still marked ``running``."""


async def open_run(
    deps: RunDeps,
    state: RunState,
    opening: Callable[[OpenedOperations], list[Message]],
    read: ThreadReader | None = None,
) -> None:
    """Open the thread for a run: read it, close what a dead run left open, save ``opening``.

    Every first step that starts a run on the thread does this: any other run still marked
    ``running`` is dead (this run holds the thread), the thread's operations are looked at
    (:attr:`RunDeps.open_operations`, which refuses a thread that waits), and what
    ``opening`` makes of them is saved. A writer that appended without holding the thread
    (an older process, a client seeding a thread) only moves the base: the thread is read
    again, a few times.

    Args:
        deps: the run's deps.
        state: the run's state (the thread is read into it).
        opening: the messages to save, given the thread's opened operations.
        read: reads the thread (default :func:`read_thread`); it may refuse it by raising.
    """
    for attempt in range(3):
        running = await (read or read_thread)(deps, state)
        for run in running:  # this run holds the thread: any other "running" one is dead
            run.status, run.error = "interrupted", run.error or INTERRUPTED_ERROR
            await deps.store.append(state.thread_id, base=len(state.messages), run=run)
        found = await deps.open_operations(deps.store, state.thread_id, state.owner, state.messages)
        state.operations = state.operations or found.any
        try:
            await save(deps, state, opening(found))
            await found.finish(deps.store, state.owner)
            return
        except ThreadConflictError:
            if attempt == 2:
                raise


async def read_thread(deps: RunDeps, state: RunState) -> list[RunRecord]:
    """Set the thread's messages and loads, reading only what the cache lacks.

    Returns the thread's runs still marked ``running``.
    """
    store, cache, thread_id = deps.store, deps.threads, state.thread_id
    cached = cache.get(thread_id)
    since = len(cached.messages) if cached is not None else 0
    tail = await store.load_tail(thread_id, since)
    if cached is not None and since and (tail.count < since or tail.before != cached.messages[-1]):
        cache.drop(thread_id)  # deleted or replaced meanwhile: start over
        cached, tail = None, await store.load_tail(thread_id, 0)
    state.read(
        [*(cached.messages if cached else ()), *tail.messages],
        [*(cached.tokens if cached else ()), *tail.message_tokens],
        list(tail.loaded_plugins),
    )
    return tail.running
