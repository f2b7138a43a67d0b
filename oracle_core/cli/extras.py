"""Optional extras: which ``pip install 'oracle-core-runtime[...]'`` brings a missing module."""

from __future__ import annotations

from oracle_core.version import DISTRIBUTION

EXTRAS: dict[str, str] = {
    "fastapi": "server",
    "uvicorn": "server",
    "starlette": "server",
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
    "wordllama": "search",
    "mcp": "mcp",
}
"""Top-level module -> the core's extra that installs it."""


def missing_module(error: BaseException) -> ImportError | None:
    """The import failure of an extra's module in ``error`` or what caused it, if any."""
    seen: BaseException | None = error
    for _ in range(8):  # a cause chain is short; a cycle must not hang
        if seen is None:
            return None
        if isinstance(seen, ImportError):
            name = seen.name or ""
            if name.split(".")[0] in EXTRAS:
                return seen
        seen = seen.__cause__ or seen.__context__
    return None


def extra_for(error: BaseException) -> str | None:
    """The extra whose absence ``error`` (or its cause) reports; ``None`` when not one of ours."""
    found = missing_module(error)
    return None if found is None else EXTRAS[(found.name or "").split(".")[0]]


def missing_extra_message(error: BaseException, command: str | None = None) -> str:
    """One line: what is missing, which extra brings it, and the command to install it.

    Args:
        error: the import failure (its ``name`` is the missing module), or an error it caused.
        command: the command that needs it (``serve``), if known.
    """
    extra = extra_for(error)
    found = missing_module(error)
    module = found.name if found is not None else "a module"
    needs = f"oracle {command} needs" if command else "this needs"
    return (
        f"{needs} the {extra!r} extra ({module} is not installed): "
        f"pip install '{DISTRIBUTION}[{extra}]'"
    )
