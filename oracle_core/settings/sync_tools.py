"""Each plugin's share of the sync-tool pool: how many workers its calls may hold at once.

Python cannot stop a thread, so a hung sync tool keeps its worker until it returns. The
pool (:class:`~oracle_core.run.pool.SyncToolPool`) is therefore split into bulkheads: one
plugin's calls, hung or not, hold at most its share, and the rest of the pool stays for
the other plugins. The share is ``ORACLE_SYNC_TOOL_SHARE``, else ``share`` of
``[sync_tools]`` in ``oracle.toml``, else half the pool (at least one worker); one plugin
may have its own under ``[sync_tools.plugins]``::

    [sync_tools]
    share = 3           # every plugin's share (ORACLE_SYNC_TOOL_SHARE wins over it)

    [sync_tools.plugins]
    reports = 1         # the reports plugin's own share
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from oracle_core.errors import ConfigError
from oracle_core.settings.reading import bad_config_value
from oracle_core.settings.unknown import unknown_key

SHARE_VARIABLE = "ORACLE_SYNC_TOOL_SHARE"
"""The environment variable that sets every plugin's share."""

SYNC_TOOLS_KEYS = ("share", "plugins")
"""The keys ``[sync_tools]`` takes."""


@dataclass(frozen=True)
class SyncToolShares:
    """How many sync-tool workers one plugin's calls may hold at once.

    Attributes:
        default: every plugin's share; ``None``: half the pool, at least one worker.
        plugins: the shares of single plugins, by plugin name (``[sync_tools.plugins]``).
    """

    default: int | None = None
    plugins: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "plugins", MappingProxyType(dict(self.plugins)))

    def of(self, plugin: str, workers: int) -> int:
        """The share of ``plugin`` in a pool of ``workers`` (never more than the pool)."""
        share = self.plugins.get(plugin, self.default)
        if share is None:
            share = workers // 2
        return max(1, min(share, workers))

    def setting(self, plugin: str) -> str:
        """Where an operator raises ``plugin``'s share, for messages that say what to change."""
        if plugin in self.plugins:
            return f"`{plugin} = N` under [sync_tools.plugins] in oracle.toml"
        return (
            f"{SHARE_VARIABLE} (every plugin), or `{plugin} = N` under [sync_tools.plugins] "
            "in oracle.toml (this plugin alone)"
        )


def read_shares(section: Any, share: int | None, path: Path) -> SyncToolShares:
    """The shares from the ``[sync_tools]`` table of ``oracle.toml`` and the environment.

    Args:
        section: the ``[sync_tools]`` table as read (``{}`` when there is none).
        share: ``ORACLE_SYNC_TOOL_SHARE`` (``None`` when unset); it wins over ``share``.
        path: the ``oracle.toml`` file, for messages.

    Raises:
        ConfigError: an unknown key, a share that is not a whole number of at least 1, or
            ``plugins`` that is not a table (naming the file, the line and the key).
    """
    for key in section:
        if key not in SYNC_TOOLS_KEYS:
            fix = (
                "its keys are share (every plugin's share) and plugins (a table of single "
                "plugins' shares)"
            )
            raise unknown_key(path, "sync_tools", key, SYNC_TOOLS_KEYS, fix, kind=ConfigError)
    default = share
    if default is None and "share" in section:
        default = _count(section["share"], "sync_tools.share", path)
    plugins = section.get("plugins", {})
    if not isinstance(plugins, dict):
        raise bad_config_value(
            path, "sync_tools.plugins", plugins, "a table ([sync_tools.plugins])"
        )
    shares = {
        name: _count(value, f"sync_tools.plugins.{name}", path) for name, value in plugins.items()
    }
    return SyncToolShares(default, shares)


def _count(value: Any, key: str, path: Path) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise bad_config_value(path, key, value, "a whole number of threads, at least 1")
    return value
