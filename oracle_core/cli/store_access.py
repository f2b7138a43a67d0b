"""The thread store of the environment, for commands that need threads but no plugins."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from oracle_core.store.base import Checkpointer


T = TypeVar("T")


def with_store(work: Callable[[Checkpointer], Awaitable[T]]) -> T:
    """Run ``work`` with the configured store (SQLite, or Postgres), closing it after.

    Raises:
        ConfigError: a bad setting (every setting is checked first, as every command does).
    """
    from oracle_core.capabilities.surface import Catalog
    from oracle_core.cli.checks import load_settings
    from oracle_core.oracle import Oracle

    settings = load_settings()
    # No plugins are needed to read threads: none are loaded, and the catalog surface is
    # given so a specialist [surface] naming plugin tools is not checked.
    oracle = Oracle(entry_points=False, settings=settings, surface=Catalog())

    async def run() -> T:
        try:
            return await work(oracle.checkpointer)
        finally:
            await oracle.close()

    return asyncio.run(run())


def thread_ids(prefix: str = "", limit: int = 200) -> list[str]:
    """The stored thread ids that start with ``prefix``, most recent first (for completion)."""

    async def listing(store: Checkpointer) -> list[str]:
        return [t for t in (await store.threads())[:limit] if t.startswith(prefix)]

    return with_store(listing)
