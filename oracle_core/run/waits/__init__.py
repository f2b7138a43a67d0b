"""Runs that wait: the wait hook, approvals, resuming exactly once, background operations.

The wait hook itself (:class:`~oracle_core.run.calls.WaitCheck`, asked about every call
after the gate and argument validation) is defined by the run, in :mod:`oracle_core.run.calls`;
the rooms here implement and settle it:

- :mod:`~oracle_core.run.waits.approvals`: the approval check (``@tool(approval=...)``,
  plugin defaults, ``[approvals]`` in ``oracle.toml``).
- :mod:`~oracle_core.run.waits.connections`: the connection check, and what a supplied
  credential settles.
- :mod:`~oracle_core.run.waits.opening`: what a new run does with its thread's operations.
- :mod:`~oracle_core.run.waits.settle`: decide, supply, cancel, each then resuming exactly
  once (what the facade calls).
- :mod:`~oracle_core.run.waits.resume`: the first step of a resumed run.
- :mod:`~oracle_core.run.waits.background`: background tool calls of this process.
- :mod:`~oracle_core.run.waits.cutoff`: the first step of a run resumed after its process
  ended mid-run (it waited for no one: it was cut off).
- :mod:`~oracle_core.run.waits.sweep`: which cut-off runs a process resumes.
"""
