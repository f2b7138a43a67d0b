"""Runs that wait: the wait hook, approvals, resuming exactly once, background operations.

- :mod:`~oracle_core.run.waits.checks`: the wait hook (:class:`WaitCheck`), asked about
  every call after the gate and argument validation.
- :mod:`~oracle_core.run.waits.approvals`: the approval check (``@tool(approval=...)``,
  plugin defaults, ``[approvals]`` in ``oracle.toml``).
- :mod:`~oracle_core.run.waits.resume`: a run carried on from a settled operation.
- :mod:`~oracle_core.run.waits.decisions`: decide, cancel, resume (what the facade calls).
- :mod:`~oracle_core.run.waits.background`: background tool calls of this process.
"""
