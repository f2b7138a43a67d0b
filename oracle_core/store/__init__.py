"""Stores persist thread state after every step of a run.

The interface is five protocols, one per facet: :class:`ThreadStore` (threads, their
messages and runs; every store keeps them) and four optional ones, :class:`LeaseStore`
(one run at a time on a thread across processes), :class:`OperationStore` (approvals,
connections, background calls), :class:`CredentialStore` (sealed credentials) and
:class:`UsageStore` (the usage ledger). A store offers an optional facet or answers
``facet(name)`` with ``None`` (:mod:`oracle_core.store.facets`); a feature that needs a
missing one raises :class:`MissingFacetError`. :class:`Checkpointer` is all five at once,
the base class of the stores shipped:

- :class:`MemoryCheckpointer`: in process, for tests.
- :class:`SQLiteCheckpointer`: one file under ``ORACLE_HOME``, the embedded default.
- :class:`~oracle_core.store.postgres.PostgresCheckpointer`: one database, many processes.
"""

from oracle_core.store.base import Checkpointer
from oracle_core.store.credentials import CredentialStore
from oracle_core.store.facets import MissingFacetError, facet_of
from oracle_core.store.leases import LeaseStore
from oracle_core.store.memory import MemoryCheckpointer
from oracle_core.store.operations import OperationStore
from oracle_core.store.sqlite.checkpointer import SQLiteCheckpointer
from oracle_core.store.threads import ThreadStore
from oracle_core.store.usage import UsageStore

__all__ = [
    "Checkpointer",
    "CredentialStore",
    "LeaseStore",
    "MemoryCheckpointer",
    "MissingFacetError",
    "OperationStore",
    "SQLiteCheckpointer",
    "ThreadStore",
    "UsageStore",
    "facet_of",
]
