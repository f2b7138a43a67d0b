"""The Postgres store (``oracle-core-runtime[postgres]``): one database shared by many processes.

- :mod:`.schema`: numbered migrations, applied once under an advisory lock.
- :mod:`.codec`: how strings and thread ids are spelled in columns, losslessly.
- :mod:`.checkpointer`: :class:`PostgresCheckpointer`: the connection pool, each method a
  call of the SQL of its facet (:mod:`.threads`, :mod:`.leases`, :mod:`.operations`,
  :mod:`.credentials`).
- :mod:`.notify`: run events across processes through ``LISTEN``/``NOTIFY``.
"""

from oracle_core.store.postgres.checkpointer import PostgresCheckpointer

__all__ = ["PostgresCheckpointer"]
