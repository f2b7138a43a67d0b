"""Thread state: a conversation's messages, its loaded plugins, and its runs."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from oracle_core.values.messages import Message, Usage

RunStatus = Literal[
    "running",
    "completed",
    "failed",
    "cancelled",
    "interrupted",
    "waiting_for_approval",
    "waiting_for_connection",
    "waiting_for_client",
]
"""A run's status.

- ``running``: a process is working on it (or was, until it is found interrupted).
- ``completed``, ``failed``, ``cancelled``: it ended; ``error`` says why a failed run failed.
- ``interrupted``: it was still ``running`` when no process held its thread's lease any more
  (the process working on it died or lost the lease), so it will never end by itself;
  :meth:`~oracle_core.store.Checkpointer.mark_interrupted` sets it. Its messages so far are kept.
- ``waiting_for_approval``, ``waiting_for_connection``: it stopped to wait for an operation
  (a person's decision, a credential); settling the operation resumes it, exactly once
  (see docs/waits.md). Nothing marks a waiting run interrupted: no process works on it.
- ``waiting_for_client``: the model called a tool the caller brought
  (:class:`~oracle_core.ClientTool`); the caller runs it and continues the same run with its
  result (``oracle.run(thread_id, tool_results=...)``). A new message instead answers the
  open calls as not run.
"""


@dataclass
class RunRecord:
    """One run: one user message worked to an answer on one thread.

    Attributes:
        id: the run id.
        thread_id: the thread it works on.
        status: ``running`` until it ends as ``completed``, ``failed`` or ``cancelled``, or is
            found ``interrupted`` (see :data:`RunStatus`).
        steps: model calls made so far.
        usage: tokens the provider reported, summed over the run's model calls.
        error: why it failed, for a failed run (or why it was interrupted).
        created_at: when it started (Unix seconds).
        updated_at: when it last saved (Unix seconds).
        options: what the caller added to the run (client tools, model options, output),
            as JSON, so a resumed run goes on with them; ``None`` when nothing was added.
        model: the model it called (the model's ``name``), set at its first model call;
            ``None`` before that, and for runs saved before runs recorded it.
        user_id: who the run acts for (a run resumed after a crash acts for them again).
        resumed: how many times it was resumed after its process ended mid-run (cut off).
        resumed_at: when it was last resumed so (Unix seconds); ``None``: never.
    """

    id: str
    thread_id: str
    status: RunStatus = "running"
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    options: dict[str, Any] | None = None
    model: str | None = None
    user_id: str = "default"
    resumed: int = 0
    resumed_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The record as JSON-ready data."""
        data = asdict(self)
        data["usage"] = self.usage.as_dict()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunRecord:
        """Rebuild a record saved with :meth:`to_json`."""
        return cls(
            **{k: v for k, v in data.items() if k != "usage"},
            usage=Usage.from_dict(data.get("usage")),
        )


@dataclass
class ThreadTail:
    """What a run needs of a thread it already holds the start of (see ``load_tail``).

    Attributes:
        thread_id: the thread's id.
        since: the index of the first message in ``messages``.
        messages: the thread's messages from ``since`` on.
        message_tokens: their token counts, aligned with ``messages``.
        count: how many messages the thread has in all; less than ``since`` when the
            thread was deleted or replaced, so what the caller holds is no longer valid.
        loaded_plugins: every plugin loaded in the thread, in load order.
        running: the thread's runs whose status is ``running``.
        before: the message just before ``since`` (``None`` when ``since`` is 0 or past
            the end), so a caller can check that the start it holds is still this thread's.
    """

    thread_id: str
    since: int
    messages: list[Message] = field(default_factory=list)
    message_tokens: list[int] = field(default_factory=list)
    count: int = 0
    loaded_plugins: list[str] = field(default_factory=list)
    running: list[RunRecord] = field(default_factory=list)
    before: Message | None = None


@dataclass(frozen=True)
class ThreadSummary:
    """One line of a listing of threads: how recent and how large a thread is.

    Attributes:
        thread_id: the thread's id.
        created_at: when it was first saved (Unix seconds).
        updated_at: when it was last saved (Unix seconds).
        messages: how many messages it holds.
        tokens: their size in tokens (the sum of ``message_tokens``).
        runs: how many runs it has had.
        title: the first words of its first user message
            (:func:`~oracle_core.values.titles.thread_title`); ``""`` when it has none.
    """

    thread_id: str
    created_at: float
    updated_at: float
    messages: int = 0
    tokens: int = 0
    runs: int = 0
    title: str = ""

    def to_json(self) -> dict[str, Any]:
        """The summary as JSON-ready data."""
        return asdict(self)


@dataclass
class ThreadState:
    """Everything saved about one thread.

    Attributes:
        thread_id: the thread's id.
        messages: the conversation in OpenAI format (no system message); keys starting with
            ``_`` are the core's bookkeeping (e.g. the tools offered with a request) and are
            never sent to the model.
        loaded_plugins: on-demand plugins loaded in this thread, in load order; it only grows.
        runs: the thread's runs, oldest first.
        message_tokens: each message's size in tokens (``o200k_base``, its public keys as
            compact JSON), aligned with ``messages``; counted once when the message was saved.
    """

    thread_id: str
    messages: list[Message] = field(default_factory=list)
    loaded_plugins: list[str] = field(default_factory=list)
    runs: list[RunRecord] = field(default_factory=list)
    message_tokens: list[int] = field(default_factory=list)

    @property
    def usage(self) -> Usage:
        """Tokens used by every run of the thread."""
        total = Usage()
        for run in self.runs:
            total = total + run.usage
        return total


INTERRUPTED_ERROR = "the run stopped before it ended: no process held its thread's lease"
"""The ``error`` a run found ``interrupted`` gets when it had none (``mark_interrupted``)."""


def interrupted(run: RunRecord, now: float) -> RunRecord:
    """``run`` as :meth:`~oracle_core.store.Checkpointer.mark_interrupted` leaves it (a copy).

    Its status becomes ``interrupted``, its ``updated_at`` ``now``, and its ``error`` (when
    empty) :data:`INTERRUPTED_ERROR`; the rest, its usage included, is kept.
    """
    return dataclasses.replace(
        run, status="interrupted", updated_at=now, error=run.error or INTERRUPTED_ERROR
    )


def tail_of(state: ThreadState, since: int) -> ThreadTail:
    """The :class:`ThreadTail` of a whole ``state`` from message ``since`` on."""
    count = len(state.messages)
    start = since if since <= count else count  # a shrunk thread: nothing to add to
    return ThreadTail(
        thread_id=state.thread_id,
        since=since,
        messages=state.messages[start:],
        message_tokens=state.message_tokens[start:],
        count=count,
        loaded_plugins=state.loaded_plugins,
        running=[r for r in state.runs if r.status == "running"],
        before=state.messages[since - 1] if 0 < since <= count else None,
    )
