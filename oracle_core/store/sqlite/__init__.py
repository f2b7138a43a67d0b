"""The embedded default store: one SQLite file (stdlib ``sqlite3``, WAL mode).

- :mod:`.checkpointer`: :class:`SQLiteCheckpointer`, each method a call of the SQL below.
- :mod:`.connection`: its write and read connections, each on a worker thread of its own.
- :mod:`.schema`: the tables, and the migration of files of an older release.
- :mod:`.threads`, :mod:`.runs`, :mod:`.leases`, :mod:`.operations`, :mod:`.credentials`:
  the SQL of each facet; :mod:`.codec` reads back the JSON it saved.
- :mod:`.connect`: connections set up the same way, for plugins keeping tables in the file.
"""
