"""The run limits of the environment: how far a run may go (docs/limits.md).

Each is a row of the settings table whose owner is ``run_limits``
(:mod:`oracle_core.settings.table_runs`): a count of at least 1 or a time above 0, except
``busy_wait``, which may be 0, and the usage limits, where unset is no limit and 0 is allowed
(a run with ``ORACLE_MAX_REQUESTS=0`` makes no model call).
"""

from __future__ import annotations

from collections.abc import Mapping

from oracle_core.settings.environment import read_settings
from oracle_core.settings.table import of_owner
from oracle_core.values.limits import RunLimits


def run_limits(env: Mapping[str, str]) -> RunLimits:
    """The run limits ``env`` sets (the defaults of :class:`RunLimits` for the others).

    Raises:
        ConfigError: a variable that is not a number in its range, naming it.
    """
    values = read_settings(env, of_owner("run_limits"))
    return RunLimits(**{name: value for name, value in values.items() if value is not None})
