"""Checkpointers persist thread state after every step of a run.

- :class:`MemoryCheckpointer`: in process, for tests.
- :class:`SQLiteCheckpointer`: one file under ``ORACLE_HOME``, the embedded default.
"""

from oracle_core.store.base import Checkpointer
from oracle_core.store.memory import MemoryCheckpointer
from oracle_core.store.sqlite.checkpointer import SQLiteCheckpointer

__all__ = ["Checkpointer", "MemoryCheckpointer", "SQLiteCheckpointer"]
