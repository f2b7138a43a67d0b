"""Operations: the waits of a run (approvals, connections) and background tool calls.

An :class:`Operation` is a plain, frozen value the stores save and load. Every wait of a
run is one (``approval``, ``connection``), and so is every background tool call
(``background``). What changes an operation is always a compare-and-set in the store
(:meth:`~oracle_core.store.Checkpointer.update_operation`), so two processes never both win.
What the change *is* is decided here, once, by pure rules (:func:`settle`, :func:`update`,
:func:`claim`, :func:`finish`): a store reads the operation and the facts the rule needs
(:class:`Facts`) under its lock, applies the rule, and writes the :class:`Ruling`'s ``save``.

Statuses, by kind:

- ``approval``: ``pending`` → ``approved`` | ``denied`` (a person's decision, or the
  deadline passing, which counts as a denial) | ``cancelled``.
- ``connection``: ``pending`` → ``supplied`` (the credential was set) | ``cancelled``.
- ``background``: ``running`` → ``completed`` | ``failed`` | ``cancelled``.

Once an operation is no longer open, exactly one caller *claims* it
(:meth:`~oracle_core.store.Checkpointer.claim_operation`) to carry it on: resume the run
waiting on it, or hand a background result to its thread. ``resumed_at`` is set when that
is done, together with ``outcome``.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Generic, Literal, TypeVar

from oracle_core.errors import OperationNotFoundError
from oracle_core.values.text import clean_json, clean_text

T = TypeVar("T", covariant=True)  # a Ruling of a narrower answer is one of a wider

OperationKind = Literal["approval", "connection", "background"]
"""What an operation is: a person's approval, a missing credential, or a background call."""

OPERATION_KINDS: tuple[OperationKind, ...] = ("approval", "connection", "background")

OPEN_STATUSES = frozenset({"pending", "running"})
"""Statuses of an operation still waiting for something (a person, a credential, the work)."""

RUNNABLE_STATUSES = frozenset({"approved", "supplied"})
"""Statuses of a wait whose saved call may run now (the approval was given, or the credential)."""

OPERATION_STATUSES = frozenset(
    {"pending", "running", "approved", "denied", "supplied", "completed", "failed", "cancelled"}
)
"""Every status an operation may have."""

OFFERED = "offered"
"""The ``details`` key of a wait that holds the names of the tools the request it answers
offered the model: a resume runs the saved call only if its tool is among them (and the
gate would show it now). Saved, never shown (:meth:`Operation.to_json` leaves it out)."""

DEADLINE_REASON = "no decision before the deadline, so it counts as denied"
"""The ``reason`` of an approval that a store denied because its deadline passed."""


def new_operation_id() -> str:
    """A fresh operation id (``op_`` and 24 hex digits: not guessable)."""
    return f"op_{uuid.uuid4().hex[:24]}"


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON text: sorted keys, no spaces, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest_of(text: str) -> str:
    """The SHA-256 hex digest of ``text`` (UTF-8): what an approval is an approval of."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Operation:
    """One wait of a run, or one background tool call.

    Attributes:
        id: the operation id (``op_...``).
        kind: ``approval``, ``connection`` or ``background``.
        status: see the module docstring; :data:`OPEN_STATUSES` are still open.
        thread_id: the thread of the run that made it.
        run_id: that run.
        user_id: who the run acts for (who asked).
        plugin: the plugin of the tool called.
        tool: the tool called.
        call_id: the id of the model's tool call it holds.
        arguments: the call's validated arguments as canonical JSON (:func:`canonical_json`):
            exactly what runs once the wait is over.
        digest: :func:`digest_of` ``arguments``; checked again before the call runs.
        reason: why it waits (while open) or the person's reason for a decision.
        result: what the call returned, as the model reads it (background calls).
        error: why it failed, when it did.
        created_at: when it was made (Unix seconds).
        updated_at: when its status last changed.
        deadline: when a pending approval counts as denied (``None``: never).
        details: kind-specific, JSON-ready facts: for a connection its ``connection`` name,
            ``connection_kind`` and ``help``; ``satisfied`` lists the wait kinds the call
            already passed (an approved call that then waits for a connection). Never secrets.
        claimed_by: who claimed carrying it on (a run id); ``None`` until claimed.
        claims: how many times it was claimed; more than one means an earlier claimer died
            while holding it (its call may have started).
        resumed_at: when it was carried on for good (``None``: not yet).
        outcome: what carrying it on produced (the resumed run's status, answer, error and id).
    """

    id: str
    kind: OperationKind
    status: str
    thread_id: str
    run_id: str
    user_id: str = "default"
    plugin: str = ""
    tool: str = ""
    call_id: str = ""
    arguments: str = "{}"
    digest: str = ""
    reason: str | None = None
    result: str | None = None
    error: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    deadline: float | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    claimed_by: str | None = None
    claims: int = 0
    resumed_at: float | None = None
    outcome: Mapping[str, Any] | None = None

    @property
    def open(self) -> bool:
        """Whether it still waits (``pending``) or still works (``running``)."""
        return self.status in OPEN_STATUSES

    def replace(self, **changes: Any) -> Operation:
        """A copy with ``changes``."""
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """The operation as JSON-ready data (what operators and events see; never a secret).

        The tools its request offered are left out: they may name tools a user never sees.
        """
        data = asdict(self)
        data["details"] = {k: v for k, v in self.details.items() if k != OFFERED}
        data["outcome"] = dict(self.outcome) if self.outcome is not None else None
        try:
            data["arguments"] = json.loads(self.arguments)
        except ValueError:
            data["arguments"] = self.arguments
        return data

    def to_record(self) -> dict[str, Any]:
        """Everything saved, exactly (``arguments`` kept as its canonical text)."""
        data = asdict(self)
        data["details"] = dict(self.details)
        data["outcome"] = dict(self.outcome) if self.outcome is not None else None
        return data

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> Operation:
        """Rebuild an operation from :meth:`to_record` or :meth:`to_json` (unknown keys ignored)."""
        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in known}
        if not isinstance(values.get("arguments", ""), str):  # from to_json(): parsed
            values["arguments"] = canonical_json(values["arguments"])
        return cls(**values)


BACKGROUND_LOST_ERROR = "the process running it stopped before it finished"
"""The ``error`` a store gives a background operation whose worker died (its lease lapsed)."""


def operation_lease(operation_id: str) -> str:
    """The lease key a background operation's worker holds while it runs (``operation:<id>``).

    Leases are keyed like threads (a key need not name a thread); the worker renews it, so
    a store can tell a background operation whose process died from one still working.
    """
    return f"operation:{operation_id}"


def expired(operation: Operation, now: float) -> bool:
    """Whether ``operation`` is a pending approval at or past its deadline (so: denied)."""
    return (
        operation.kind == "approval"
        and operation.status == "pending"
        and operation.deadline is not None
        and operation.deadline <= now
    )


# -- the rules every store applies (memory, SQLite, Postgres): decided here, written there


@dataclass(frozen=True)
class Facts:
    """What a store knows, besides the operation itself, when it applies a rule.

    Attributes:
        now: the store's clock (Unix seconds), as for leases.
        worker_alive: whether someone holds a live lease on :func:`operation_lease` of the
            operation (a background operation's worker is still working).
        thread_holder: the owner of the live lease on the operation's thread (``None``:
            no live lease); a claim is tied to its claimer's thread lease.
    """

    now: float
    worker_alive: bool = False
    thread_holder: str | None = None


@dataclass(frozen=True)
class Ruling(Generic[T]):
    """What a rule decided: the store's answer, and the operation to write (if any).

    Attributes:
        answer: what the store method returns.
        save: the operation to write over the stored one; ``None`` when nothing changes.
    """

    answer: T
    save: Operation | None = None


@dataclass(frozen=True)
class Update:
    """A compare-and-set of an operation's status (see :func:`update`).

    Attributes:
        operation_id: the operation.
        expect: the statuses it may have for the change to happen.
        status: its new status.
        reason: a new ``reason`` (``None``: kept).
        result: a new ``result`` (``None``: kept).
        error: a new ``error`` (``None``: kept).
        details: keys to merge into ``details`` (``None``: kept).
    """

    operation_id: str
    expect: Collection[str]
    status: str
    reason: str | None = None
    result: str | None = None
    error: str | None = None
    details: Mapping[str, Any] | None = None


def settle(operation: Operation, facts: Facts) -> Ruling[Operation]:
    """What time alone makes of ``operation``; every read of an operation applies it first.

    A pending approval at or past its deadline is denied (:data:`DEADLINE_REASON`); a running
    background operation whose worker holds no live lease failed (:data:`BACKGROUND_LOST_ERROR`).
    Anything else is left as it is (``save`` is ``None``).
    """
    changed: Operation | None = None
    if expired(operation, facts.now):
        changed = operation.replace(status="denied", reason=DEADLINE_REASON, updated_at=facts.now)
    elif (
        operation.kind == "background" and operation.status == "running" and not facts.worker_alive
    ):
        changed = operation.replace(
            status="failed", error=BACKGROUND_LOST_ERROR, updated_at=facts.now
        )
    return Ruling(changed or operation, changed)


def update(
    operation: Operation | None, request: Update, facts: Facts
) -> Ruling[tuple[Operation, bool]]:
    """Compare-and-set ``operation``'s status as ``request`` asks (settled first).

    When its status is one of ``request.expect`` it takes ``request.status``, ``updated_at``
    becomes now, and each of ``reason``, ``result``, ``error`` given replaces the saved one
    (``details`` merges key by key), strings cleaned. Otherwise nothing changes but what
    settling changed. The answer is the operation afterwards and whether this call changed it.

    Raises:
        OperationNotFoundError: when there is no operation (``operation`` is ``None``).
    """
    if operation is None:
        raise OperationNotFoundError(
            f"no operation has the id {request.operation_id!r}",
            operation_id=request.operation_id,
        )
    settled = settle(operation, facts)
    current = settled.answer
    if current.status not in request.expect:
        return Ruling((current, False), settled.save)
    changes: dict[str, Any] = {"status": request.status, "updated_at": facts.now}
    texts = (("reason", request.reason), ("result", request.result), ("error", request.error))
    for name, value in texts:
        if value is not None:
            changes[name] = clean_text(value)
    if request.details is not None:
        changes["details"] = {**current.details, **clean_json(dict(request.details))}
    changed = current.replace(**changes)
    return Ruling((changed, True), changed)


def claim(operation: Operation | None, owner: str, facts: Facts) -> Ruling[Operation | None]:
    """``owner``'s claim to carry ``operation`` on (settled first), or ``None`` when refused.

    It is refused when there is no operation, when it is still open, when it was carried on
    already (``resumed_at`` set), or when another owner claimed it and still holds the live
    lease of its thread (``facts.thread_holder``). A repeat by the owner holding the claim
    answers with that claim unchanged; a new claim (also over a claimer that died) sets
    ``claimed_by`` and adds one to ``claims``.
    """
    if operation is None:
        return Ruling(None)
    settled = settle(operation, facts)
    current = settled.answer
    if current.open or current.resumed_at is not None:
        return Ruling(None, settled.save)
    holder = current.claimed_by
    if holder == owner:
        return Ruling(current, settled.save)
    if holder is not None and holder == facts.thread_holder:
        return Ruling(None, settled.save)
    claimed = current.replace(claimed_by=owner, claims=current.claims + 1)
    return Ruling(claimed, claimed)


def finish(
    operation: Operation | None, owner: str, outcome: Mapping[str, Any], now: float
) -> Ruling[bool]:
    """Mark ``operation`` carried on by ``owner``: ``resumed_at`` now, ``outcome`` (cleaned) saved.

    Only the owner holding the claim finishes it, once; otherwise the answer is ``False``
    and nothing changes. A claimed operation is never open, so nothing is settled first.
    """
    if operation is None or operation.claimed_by != owner or operation.resumed_at is not None:
        return Ruling(False)
    return Ruling(True, operation.replace(resumed_at=now, outcome=clean_json(dict(outcome))))
