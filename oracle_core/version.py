"""The version of oracle-core: one place, read by the package face, the server and the start-up cache."""

__version__ = "0.1.0"
