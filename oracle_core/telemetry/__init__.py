"""What operators see of runs: OpenTelemetry traces and Prometheus metrics (docs/observability.md).

Each is a :class:`~oracle_core.run.observe.RunObserver` built from the settings by
:func:`default_observers`; an oracle adds the observers given to it in code after them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oracle_core.run.observe import RunObserver
    from oracle_core.settings import Settings


def default_observers(settings: Settings) -> list[RunObserver]:
    """The observers every oracle built with ``settings`` has (none are configured yet)."""
    return []
