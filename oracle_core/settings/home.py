"""Where ``ORACLE_HOME`` is: the folder of ``oracle.db``, ``oracle.toml`` and the caches."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def default_home() -> Path:
    """The platform's user data folder for ``oracle`` (used when ``ORACLE_HOME`` is unset)."""
    from platformdirs import user_data_path

    return user_data_path("oracle", appauthor=False)


def home_from_env(env: Mapping[str, str]) -> Path:
    """``ORACLE_HOME`` of ``env`` as an absolute path (``~`` expanded, a relative one taken
    from the current folder once, here), else :func:`default_home`.

    Made absolute where the settings are read, so a process that changes its folder later
    (a server, a test, a plugin) still finds the same home, and every message names the
    folder in full.
    """
    home = (env.get("ORACLE_HOME") or "").strip()
    if not home:
        return default_home()
    return Path(os.path.abspath(Path(home).expanduser()))
