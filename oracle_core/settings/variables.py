"""Environment variables named ``ORACLE_*`` that nothing reads: each a warning with the closest
known name, so ``ORACLE_MODLE=openai/gpt-4o`` is not silently ignored (the oracle would run
without a model, or with another one).

:data:`KNOWN_VARIABLES` lists every variable the core reads, from the settings table (a test
keeps it equal to the names in the source). ``ORACLE_PLUGIN_<NAME>__<KEY>`` variables belong to plugins and are
only checked for their shape: a single underscore before the key (``ORACLE_PLUGIN_WEATHER_UNITS``)
names no key, and is warned about. ``ORACLE_TEST_*`` variables belong to test harnesses
and are left alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from oracle_core.settings.table import SETTINGS
from oracle_core.settings.unknown import closest

KNOWN_VARIABLES: frozenset[str] = frozenset(
    setting.variable
    for setting in SETTINGS
    if setting.variable and setting.variable.startswith("ORACLE_") and "<" not in setting.variable
)
"""Every ``ORACLE_*`` variable the core reads: those of the settings table
(:mod:`oracle_core.settings.table`; docs/operators.md lists them)."""

PREFIX = "ORACLE_"
PLUGIN_PREFIX = "ORACLE_PLUGIN_"
TEST_PREFIX = "ORACLE_TEST_"
"""Variables of test harnesses (such as the suite's Postgres URL): never warned about."""


def unknown_variables(env: Mapping[str, str]) -> list[str]:
    """One warning for each ``ORACLE_*`` variable of ``env`` that nothing reads (naming the
    closest known variable), and each ``ORACLE_PLUGIN_*`` one without ``__`` before its key."""
    warnings = []
    for name in env:
        if not name.startswith(PREFIX) or name in KNOWN_VARIABLES or name.startswith(TEST_PREFIX):
            continue
        if name.startswith(PLUGIN_PREFIX):
            if "__" not in name[len(PLUGIN_PREFIX) :]:
                warnings.append(
                    f"environment variable {name} is ignored: a plugin setting is "
                    "ORACLE_PLUGIN_<NAME>__<KEY>, two underscores before the key "
                    "(ORACLE_PLUGIN_WEATHER__UNITS)"
                )
            continue
        near = closest(name, KNOWN_VARIABLES)
        hint = f" (did you mean {near}?)" if near else ""
        warnings.append(
            f"environment variable {name} is ignored: oracle reads no such variable{hint}; "
            "docs/operators.md lists them"
        )
    return warnings
