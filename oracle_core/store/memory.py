"""An in-process checkpointer for tests and throwaway oracles."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from oracle_core.store.base import Checkpointer
from oracle_core.store.credentials import credential_key
from oracle_core.store.leases import WAITER_LIVENESS, check_ttl
from oracle_core.store.saving import clean_run, prepare_messages
from oracle_core.store.threads import conflict
from oracle_core.store.usage import (
    Grouping,
    Spent,
    UsageEntry,
    UsageGroup,
    spent_of,
    summarize,
    total,
)
from oracle_core.values import operations as rules
from oracle_core.values.credentials import CredentialRecord
from oracle_core.values.messages import Message
from oracle_core.values.operations import Facts, Operation, Ruling, Update, operation_lease
from oracle_core.values.text import clean_json, clean_text
from oracle_core.values.threads import (
    RunRecord,
    ThreadState,
    ThreadSummary,
    ThreadTail,
    interrupted,
    tail_of,
)
from oracle_core.values.titles import first_user_title

T = TypeVar("T")


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
        self._created: dict[str, float] = {}
        self._leases: dict[str, _Lease] = {}
        self._waiters: dict[str, dict[str, tuple[float, float]]] = {}  # owner -> (since, seen)
        self._credentials: dict[tuple[str, str, str], CredentialRecord] = {}
        self._operations: dict[str, Operation] = {}
        self._usage: list[UsageEntry] = []

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
        usage: Sequence[UsageEntry] = (),
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
        self._created.setdefault(thread_id, now)
        self._usage.extend(usage)
        return list(state.loaded_plugins)

    async def threads(self) -> list[str]:
        return sorted(self._threads, key=lambda t: self._touched.get(t, 0.0), reverse=True)

    async def thread_summaries(self, *, limit: int | None = None) -> list[ThreadSummary]:
        return [
            ThreadSummary(
                tid,
                created_at=self._created.get(tid, 0.0),
                updated_at=self._touched.get(tid, 0.0),
                messages=len(self._threads[tid].messages),
                tokens=sum(self._threads[tid].message_tokens),
                runs=len(self._threads[tid].runs),
                title=first_user_title(self._threads[tid].messages),
            )
            for tid in (await self.threads())[:limit]
        ]

    async def delete(self, thread_id: str) -> bool:
        thread_id = clean_text(thread_id)
        self._touched.pop(thread_id, None)
        self._created.pop(thread_id, None)
        self._leases.pop(thread_id, None)
        self._waiters.pop(thread_id, None)
        for operation in [o for o in self._operations.values() if o.thread_id == thread_id]:
            del self._operations[operation.id]
        return self._threads.pop(thread_id, None) is not None

    async def record_usage(self, entries: Sequence[UsageEntry]) -> None:
        self._usage.extend(entries)

    async def usage(
        self, *, user_id: str | None = None, since: float | None = None
    ) -> list[UsageEntry]:
        found = [
            e
            for e in self._usage
            if (user_id is None or e.user_id == user_id) and (since is None or e.at >= since)
        ]
        return sorted(found, key=lambda e: e.at)

    async def usage_summary(
        self, *, by: Grouping, user_id: str | None = None, since: float | None = None
    ) -> tuple[list[UsageGroup], UsageGroup]:
        entries = await self.usage(user_id=user_id, since=since)
        return summarize(entries, by), total(entries)

    async def spent(
        self, *, since: float, user_id: str | None = None, thread_id: str | None = None
    ) -> Spent:
        return spent_of(
            e
            for e in self._usage
            if e.at >= since
            and (user_id is None or e.user_id == user_id)
            and (thread_id is None or e.thread_id == thread_id)
        )

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
            runs = self._threads[tid].runs if tid in self._threads else []
            for index, run in enumerate(runs):
                if run.status == "running":
                    runs[index] = interrupted(run, now)
                    marked.append((run.created_at, run.id))
        return [run_id for _, run_id in sorted(marked)]

    async def cut_off_runs(self) -> list[RunRecord]:
        now = self._clock()
        found = [
            dataclasses.replace(run)
            for tid, thread in self._threads.items()
            if not ((held := self._leases.get(tid)) is not None and held.expires_at > now)
            for run in thread.runs
            if run.status == "running"
        ]
        return sorted(found, key=lambda run: run.created_at)

    async def save_credential(self, plugin: str, name: str, user_id: str, sealed: str) -> None:
        key = credential_key(plugin, name, user_id)
        now = self._clock()
        old = self._credentials.get(key)
        self._credentials[key] = CredentialRecord(
            *key, created_at=old.created_at if old else now, updated_at=now, sealed=sealed
        )

    async def load_credential(
        self, plugin: str, name: str, user_id: str
    ) -> CredentialRecord | None:
        return self._credentials.get(credential_key(plugin, name, user_id))

    async def delete_credential(self, plugin: str, name: str, user_id: str) -> bool:
        return self._credentials.pop(credential_key(plugin, name, user_id), None) is not None

    async def credentials(
        self, *, plugin: str | None = None, user_id: str | None = None
    ) -> list[CredentialRecord]:
        return [
            dataclasses.replace(record, sealed="")
            for key, record in sorted(self._credentials.items())
            if (plugin is None or key[0] == plugin) and (user_id is None or key[2] == user_id)
        ]

    # -- operations: the rules of values/operations.py, applied with no await between the
    # read and the write, so each change is atomic for every task of this event loop

    def _holder(self, key: str, now: float) -> str | None:
        """The owner of the live lease ``key``, if any."""
        held = self._leases.get(clean_text(key))
        return held.owner if held is not None and held.expires_at > now else None

    def _facts(self, operation: Operation | None) -> Facts:
        now = self._clock()
        if operation is None:
            return Facts(now)
        return Facts(
            now,
            worker_alive=self._holder(operation_lease(operation.id), now) is not None,
            thread_holder=self._holder(operation.thread_id, now),
        )

    def _apply(self, ruling: Ruling[T]) -> T:
        if ruling.save is not None:
            self._operations[ruling.save.id] = ruling.save
        return ruling.answer

    def _settled(self, operation_id: str) -> Operation | None:
        operation = self._operations.get(operation_id)
        if operation is None:
            return None
        return self._apply(rules.settle(operation, self._facts(operation)))

    async def insert_operation(self, operation: Operation) -> None:
        saved = Operation.from_record(clean_json(operation.to_record()))
        if saved.id in self._operations:
            raise ValueError(f"operation {saved.id!r} exists already")
        self._operations[saved.id] = saved

    async def get_operation(self, operation_id: str) -> Operation | None:
        return self._settled(clean_text(operation_id))

    async def list_operations(
        self,
        *,
        thread_id: str | None = None,
        status: str | None = None,
        run_id: str | None = None,
        kind: str | None = None,
        limit: int = 1000,
    ) -> list[Operation]:
        wanted = {
            "thread_id": None if thread_id is None else clean_text(thread_id),
            "status": status,
            "run_id": run_id,
            "kind": kind,
        }
        found = []
        for operation_id in list(self._operations):
            operation = self._settled(operation_id)
            if operation is not None and all(
                value is None or getattr(operation, name) == value for name, value in wanted.items()
            ):
                found.append(operation)
        found.sort(key=lambda o: o.created_at)
        return found[: max(0, limit)]

    async def update_operation(
        self,
        operation_id: str,
        *,
        expect: Collection[str],
        status: str,
        reason: str | None = None,
        result: str | None = None,
        error: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> tuple[Operation, bool]:
        operation_id = clean_text(operation_id)
        request = Update(operation_id, expect, status, reason, result, error, details)
        current = self._operations.get(operation_id)
        return self._apply(rules.update(current, request, self._facts(current)))

    async def claim_operation(self, operation_id: str, owner: str) -> Operation | None:
        current = self._operations.get(clean_text(operation_id))
        return self._apply(rules.claim(current, clean_text(owner), self._facts(current)))

    async def finish_operation(
        self, operation_id: str, owner: str, outcome: Mapping[str, Any]
    ) -> bool:
        current = self._operations.get(clean_text(operation_id))
        return self._apply(rules.finish(current, clean_text(owner), outcome, self._clock()))
