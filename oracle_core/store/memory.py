"""An in-process checkpointer for tests and throwaway oracles."""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence

from oracle_core.errors import ThreadConflictError
from oracle_core.run.messages import Message
from oracle_core.store.base import Checkpointer
from oracle_core.store.state import RunRecord, ThreadState


def conflict(thread_id: str, base: int, actual: int) -> ThreadConflictError:
    """The error raised when a writer appends on top of a stale view of a thread."""
    return ThreadConflictError(
        f"thread {thread_id!r} has {actual} messages but this writer expected {base}: another "
        "run appended to it meanwhile; reload the thread and retry"
    )


class MemoryCheckpointer(Checkpointer):
    """Keeps every thread in a dict; nothing survives the process."""

    def __init__(self) -> None:
        self._threads: dict[str, ThreadState] = {}
        self._touched: dict[str, float] = {}

    async def load(self, thread_id: str) -> ThreadState:
        return copy.deepcopy(self._threads.get(thread_id) or ThreadState(thread_id))

    async def append(
        self,
        thread_id: str,
        *,
        base: int,
        messages: Sequence[Message] = (),
        loaded: Sequence[str] = (),
        run: RunRecord | None = None,
    ) -> list[str]:
        state = self._threads.setdefault(thread_id, ThreadState(thread_id))
        if messages and len(state.messages) != base:
            raise conflict(thread_id, base, len(state.messages))
        state.messages.extend(copy.deepcopy(list(messages)))
        state.loaded_plugins.extend(
            p for p in dict.fromkeys(loaded) if p not in state.loaded_plugins
        )
        if run is not None:
            saved = copy.deepcopy(run)
            index = next((i for i, r in enumerate(state.runs) if r.id == run.id), None)
            if index is None:
                state.runs.append(saved)
            else:
                state.runs[index] = saved
        self._touched[thread_id] = time.time()
        return list(state.loaded_plugins)

    async def threads(self) -> list[str]:
        return sorted(self._threads, key=lambda t: self._touched.get(t, 0.0), reverse=True)
