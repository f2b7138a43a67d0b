"""Testing helpers for plugin authors (see docs/testing.md)."""
