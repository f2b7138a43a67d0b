"""The wait hook's values, under the name they had before they moved to :mod:`oracle_core.run.calls`.

The executor defines what a prepared call and a wait are (it must not import the waits
that build on them); wait checks written against this module keep working.
"""

from oracle_core.run.calls import (
    PreparedCall,
    Wait,
    WaitCheck,
    WaitKind,
    first_wait,
    prepare_call,
    waiting_result,
)

__all__ = [
    "PreparedCall",
    "Wait",
    "WaitCheck",
    "WaitKind",
    "first_wait",
    "prepare_call",
    "waiting_result",
]
