"""What a run changes as it goes, as one value the loop carries.

Like pydantic-ai's ``GraphAgentState`` beside its deps: :class:`RunState` holds what one
run has read and done (the thread's messages, its record, its answer, what it waits on),
and :class:`~oracle_core.run.deps.RunDeps` what every run uses. A new turn and a resumed
run differ only in the state they start from and their first step.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from oracle_core.store.usage import UsageEntry
from oracle_core.values.attachments import Attachment
from oracle_core.values.messages import Message
from oracle_core.values.operations import Operation
from oracle_core.values.run_options import RunOptions, options_json
from oracle_core.values.threads import RunRecord


def new_run_id() -> str:
    """A fresh run id."""
    return f"run_{uuid.uuid4().hex[:16]}"


@dataclass
class RunState:
    """One run's state: the thread as it read and saved it, and how far it got.

    Attributes:
        record: the run's record (its id, thread, status, steps, usage, error).
        owner: who holds the thread's lease (a resume attempt has its own).
        message: what the user said ("" for a resumed run).
        attachments: the files attached to it (values/attachments.py).
        user_id: who the run acts for.
        stream: yield the model's text as it arrives (``text_delta`` events).
        messages: the thread's messages, as saved.
        tokens: each message's tokens.
        message_tokens: their sum.
        loaded: the thread's loaded plugins.
        answer: the final answer, once there is one.
        truncated: the model's output limit cut the final answer short.
        deadline: when the run's time is up (event loop time).
        started: whether ``run_started`` was yielded.
        operations: the thread has an operation (the request shows ``get_operation``).
        waiting: what a waiting run waits on.
        options: what the caller added to the run (client tools, model options).
        client_calls: the client tools' calls a ``waiting_for_client`` run hands back.
        output_repairs: the repair turns its answer had (run/output.py: one at most).
        failed_observers: the observers that failed on this run (left out of its rest).
        notes: what observers keep of this run between its events (each its own key).
        pending_usage: usage-ledger rows saved with the run's next step (one write).
        error_type: the type of the exception that failed the run (what traces and logs
            name of a failure without its text, which may quote the run's content).
        steps_from: the step its step limit counts from (``None``: its next one; a run
            resumed after its process ended counts from its first, 1).
    """

    record: RunRecord
    owner: str
    message: str = ""
    user_id: str = "default"
    stream: bool = True
    messages: list[Message] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    message_tokens: int = 0
    loaded: list[str] = field(default_factory=list)
    answer: str = ""
    truncated: bool = False
    deadline: float = 0.0
    started: bool = False
    operations: bool = False
    waiting: list[Operation] = field(default_factory=list)
    options: RunOptions = field(default_factory=RunOptions)
    client_calls: list[dict[str, Any]] = field(default_factory=list)
    output_repairs: int = 0
    attachments: tuple[Attachment, ...] = ()
    failed_observers: set[int] = field(default_factory=set)
    notes: dict[str, Any] = field(default_factory=dict)
    pending_usage: list[UsageEntry] = field(default_factory=list)
    steps_from: int | None = None
    error_type: type[BaseException] | None = None

    @classmethod
    def new(
        cls,
        thread_id: str,
        message: str,
        *,
        user_id: str = "default",
        stream: bool = True,
        options: RunOptions | None = None,
    ) -> RunState:
        """The state a new turn starts from: a fresh run, holding the lease under its id."""
        record = RunRecord(id=new_run_id(), thread_id=thread_id, user_id=user_id)
        state = cls(record, record.id, message, user_id, stream)
        if options is not None:
            state.options = options
            record.options = options_json(options)  # a resumed run goes on with them
        return state

    @property
    def thread_id(self) -> str:
        """The thread the run works on."""
        return self.record.thread_id

    @property
    def running(self) -> bool:
        """Whether the run goes on (no step ended it: completed, waiting, cancelled)."""
        return self.record.status == "running"

    def read(self, messages: list[Message], tokens: list[int], loaded: list[str]) -> None:
        """Take the thread as read from the store."""
        self.messages, self.tokens, self.loaded = messages, tokens, loaded
        self.message_tokens = sum(tokens)
