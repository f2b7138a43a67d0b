"""An in-process checkpointer for tests and throwaway oracles."""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from oracle_core.errors import ThreadConflictError
from oracle_core.run.messages import Message
from oracle_core.store.base import (
    INTERRUPTED_ERROR,
    WAITER_LIVENESS,
    Checkpointer,
    check_ttl,
    tail_of,
)
from oracle_core.store.saving import clean_run, prepare_messages
from oracle_core.store.state import RunRecord, ThreadState, ThreadTail
from oracle_core.text import clean_text


def conflict(thread_id: str, base: int, actual: int) -> ThreadConflictError:
    """The error raised when a writer appends on top of a stale view of a thread."""
    return ThreadConflictError(
        f"thread {thread_id!r} has {actual} messages but this writer expected {base}: another "
        "run appended to it meanwhile; reload the thread and retry"
    )


@dataclass
class _Lease:
    owner: str
    ttl: float
    expires_at: float


class MemoryCheckpointer(Checkpointer):
    """Keeps every thread in a dict; nothing survives the process.

    Args:
        clock: the wall clock leases expire by (``time.time``); tests pass their own.
    """

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._threads: dict[str, ThreadState] = {}
        self._touched: dict[str, float] = {}
        self._leases: dict[str, _Lease] = {}
        self._waiters: dict[str, dict[str, tuple[float, float]]] = {}  # owner -> (since, seen)

    async def load(self, thread_id: str) -> ThreadState:
        thread_id = clean_text(thread_id)
        return copy.deepcopy(self._threads.get(thread_id) or ThreadState(thread_id))

    async def load_tail(self, thread_id: str, since: int) -> ThreadTail:
        thread_id = clean_text(thread_id)
        state = self._threads.get(thread_id) or ThreadState(thread_id)
        return copy.deepcopy(tail_of(state, since))  # copies the tail only

    async def append(
        self,
        thread_id: str,
        *,
        base: int,
        messages: Sequence[Message] = (),
        loaded: Sequence[str] = (),
        run: RunRecord | None = None,
        lease: str | None = None,
        tokens: Sequence[int] | None = None,
    ) -> list[str]:
        thread_id = clean_text(thread_id)
        # Cleaning and counting happen before the checks, with no await between checking
        # and writing, so the step stays atomic for every task of this event loop.
        cleaned, counts = (
            await asyncio.to_thread(prepare_messages, messages, tokens) if messages else ([], [])
        )
        state = self._threads.setdefault(thread_id, ThreadState(thread_id))
        if messages and len(state.messages) != base:
            raise conflict(thread_id, base, len(state.messages))
        state.messages.extend(cleaned)
        state.message_tokens.extend(counts)
        state.loaded_plugins.extend(
            p for p in dict.fromkeys(map(clean_text, loaded)) if p not in state.loaded_plugins
        )
        if run is not None:
            saved = clean_run(run)
            index = next((i for i, r in enumerate(state.runs) if r.id == saved.id), None)
            if index is None:
                state.runs.append(saved)
            else:
                state.runs[index] = saved
        now = self._clock()
        if lease is not None:
            held = self._leases.get(thread_id)
            if held is not None and held.owner == clean_text(lease):
                held.expires_at = now + held.ttl
        self._touched[thread_id] = now
        return list(state.loaded_plugins)

    async def threads(self) -> list[str]:
        return sorted(self._threads, key=lambda t: self._touched.get(t, 0.0), reverse=True)

    async def acquire(self, thread_id: str, owner: str, ttl: float) -> bool:
        check_ttl(ttl)
        thread_id, owner, now = clean_text(thread_id), clean_text(owner), self._clock()
        held = self._leases.get(thread_id)
        waiters = self._waiters.setdefault(thread_id, {})
        renewal = held is not None and held.owner == owner
        free = held is None or held.expires_at <= now
        mine = waiters.get(owner, (now, now))[0]
        queued = any(
            other != owner and seen > now - WAITER_LIVENESS and since < mine
            for other, (since, seen) in waiters.items()
        )
        if renewal or (free and not queued):
            self._leases[thread_id] = _Lease(owner, ttl, now + ttl)
            waiters.pop(owner, None)
            return True
        waiters[owner] = (mine, now)  # in the queue: first come, first served
        return False

    async def release(self, thread_id: str, owner: str) -> None:
        thread_id = clean_text(thread_id)
        held = self._leases.get(thread_id)
        if held is not None and held.owner == clean_text(owner):
            del self._leases[thread_id]

    async def mark_interrupted(self, thread_id: str | None = None) -> list[str]:
        now = self._clock()
        ids = list(self._threads) if thread_id is None else [clean_text(thread_id)]
        marked: list[tuple[float, str]] = []
        for tid in ids:
            held = self._leases.get(tid)
            if held is not None and held.expires_at > now:
                continue
            for run in self._threads[tid].runs if tid in self._threads else ():
                if run.status == "running":
                    run.status, run.updated_at = "interrupted", now
                    run.error = run.error or INTERRUPTED_ERROR
                    marked.append((run.created_at, run.id))
        return [run_id for _, run_id in sorted(marked)]
