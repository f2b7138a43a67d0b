"""Stores persist thread state after every step of a run.

The interface is four protocols, one a facet: :class:`ThreadStore` (threads, their
messages and runs), :class:`LeaseStore` (one run at a time on a thread),
:class:`OperationStore` (approvals, connections, background calls) and
:class:`CredentialStore` (sealed credentials). :class:`Checkpointer` is all four at once,
the base class of every store:

- :class:`MemoryCheckpointer`: in process, for tests.
- :class:`SQLiteCheckpointer`: one file under ``ORACLE_HOME``, the embedded default.
- :class:`~oracle_core.store.postgres.PostgresCheckpointer`: one database, many processes.
"""

from oracle_core.store.base import Checkpointer
from oracle_core.store.credentials import CredentialStore
from oracle_core.store.leases import LeaseStore
from oracle_core.store.memory import MemoryCheckpointer
from oracle_core.store.operations import OperationStore
from oracle_core.store.sqlite.checkpointer import SQLiteCheckpointer
from oracle_core.store.threads import ThreadStore

__all__ = [
    "Checkpointer",
    "CredentialStore",
    "LeaseStore",
    "MemoryCheckpointer",
    "OperationStore",
    "SQLiteCheckpointer",
    "ThreadStore",
]
