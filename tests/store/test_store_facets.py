"""A store offers threads and only the optional facets it has (oracle_core/store/facets.py).

A third-party store that keeps threads and nothing else runs plain runs: the core asks for
leases, operations and the usage ledger before it uses them. A feature that needs a facet
the store lacks fails naming the store, the facet and the feature.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path

import pytest
from waits_support import Kit

from oracle_core import Oracle, Settings, tool
from oracle_core.store import (
    Checkpointer,
    MemoryCheckpointer,
    MissingFacetError,
    ThreadStore,
    facet_of,
)
from oracle_core.store.faceted import FacetedStore, as_checkpointer
from oracle_core.store.facets import FacetName
from oracle_core.store.usage import UsageEntry
from oracle_core.testing import ScriptedModel, refuse_model_requests
from oracle_core.values.messages import Message
from oracle_core.values.threads import RunRecord, ThreadState


class ThreadsOnly(ThreadStore):
    """A store as a third party might write one: threads in a dict, no other facet."""

    def __init__(self) -> None:
        self.saved: dict[str, ThreadState] = {}

    async def load(self, thread_id: str) -> ThreadState:
        return copy.deepcopy(self.saved.get(thread_id) or ThreadState(thread_id))

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
        assert not usage, "a store without a usage ledger is handed no usage rows"
        state = self.saved.setdefault(thread_id, ThreadState(thread_id))
        if messages and len(state.messages) != base:
            raise AssertionError("a conflict this test does not make")
        state.messages.extend(copy.deepcopy(list(messages)))
        state.message_tokens.extend(tokens or [1] * len(messages))
        state.loaded_plugins += [p for p in loaded if p not in state.loaded_plugins]
        if run is not None:
            state.runs = [r for r in state.runs if r.id != run.id] + [run]
        return list(state.loaded_plugins)

    async def threads(self) -> list[str]:
        return list(self.saved)


@tool
def shout(text: str) -> str:
    """Say ``text`` louder."""
    return text.upper()


@tool(approval=True)
def launch(target: str) -> str:
    """Launch at ``target`` (a person approves first)."""
    return f"launched at {target}"


def _tools() -> Kit:
    """The test's plugin: one plain tool and one that needs an approval."""
    return Kit(shout, launch)


def _settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"ORACLE_HOME": str(tmp_path / "home"), **env})


def test_a_store_says_which_facets_it_offers() -> None:
    store = ThreadsOnly()
    assert [facet_of(store, n) for n in ("leases", "operations", "credentials", "usage")] == [
        None,
        None,
        None,
        None,
    ]
    memory = MemoryCheckpointer()
    assert facet_of(memory, "leases") is memory and facet_of(memory, "usage") is memory
    assert as_checkpointer(memory) is memory
    wrapped = as_checkpointer(store)
    assert isinstance(wrapped, FacetedStore) and isinstance(wrapped, Checkpointer)
    assert facet_of(wrapped, "operations") is None


def test_a_store_may_hand_out_one_facet_kept_elsewhere() -> None:
    ledger = MemoryCheckpointer()

    class WithLedger(ThreadsOnly):
        def facet(self, name: FacetName) -> object:
            return ledger if name == "usage" else super().facet(name)

    store = WithLedger()
    assert facet_of(store, "usage") is ledger
    assert facet_of(store, "leases") is None


async def test_a_store_of_threads_only_serves_a_plain_run_with_a_tool_call(
    tmp_path: Path,
) -> None:
    store = ThreadsOnly()
    with refuse_model_requests(), ScriptedModel() as model:
        model.reply_tool_call("shout", {"text": "hi"}).reply_text("It said HI.")
        oracle = Oracle(
            [_tools()], entry_points=False, model=model, checkpointer=store,
            settings=_settings(tmp_path),
        )  # fmt: skip
        try:
            first = await oracle.run("t", "shout hi")
            model.reply_text("Again.")
            second = await oracle.run("t", "once more")
            report = await oracle.prompt_report("t")
        finally:
            await oracle.close()
    assert first.status == "completed", first.error
    assert first.answer == "It said HI."
    assert second.status == "completed", second.error
    saved = store.saved["t"]
    assert [m["role"] for m in saved.messages] == [
        "user", "assistant", "tool", "assistant", "user", "assistant",
    ]  # fmt: skip
    assert saved.messages[2]["content"] == "HI"
    assert [r.status for r in saved.runs] == ["completed", "completed"]
    assert report["thread_id"] == "t"


async def test_a_feature_that_needs_a_missing_facet_names_the_store_and_the_facet(
    tmp_path: Path,
) -> None:
    store = ThreadsOnly()
    with refuse_model_requests(), ScriptedModel() as model:
        model.reply_tool_call("launch", {"target": "moon"}).reply_text("unused")
        oracle = Oracle(
            [_tools()], entry_points=False, model=model, checkpointer=store,
            settings=_settings(tmp_path),
        )  # fmt: skip
        try:
            result = await oracle.run("t", "launch at the moon")
            with pytest.raises(MissingFacetError) as raised:
                await oracle.operations()
        finally:
            await oracle.close()
    assert result.status == "failed"
    assert "ThreadsOnly" in (result.error or "") and "operations" in (result.error or "")
    error = raised.value
    assert (error.store, error.facet) == ("ThreadsOnly", "operations")
    assert "ThreadsOnly offers no operations facet" in str(error)


async def test_budgets_on_a_store_without_a_usage_ledger_fail_when_the_oracle_starts(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "oracle.toml").write_text("[budgets]\nuser_day_tokens = 5000\n", encoding="utf-8")
    with refuse_model_requests(), ScriptedModel() as model:
        oracle = Oracle(
            entry_points=False, model=model, checkpointer=ThreadsOnly(),
            settings=_settings(tmp_path),
        )  # fmt: skip
        try:
            with pytest.raises(MissingFacetError, match=r"no usage facet.*\[budgets\]"):
                await oracle.start()
        finally:
            await oracle.close()
