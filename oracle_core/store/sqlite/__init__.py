"""The embedded default store: one SQLite file (stdlib ``sqlite3``, WAL mode)."""
