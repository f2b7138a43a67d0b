"""Runs that wait: the wait hook, approvals, resuming exactly once, background operations.

- :mod:`~oracle_core.run.waits.checks`: the wait hook (:class:`WaitCheck`), asked about
  every call after the gate and argument validation.
- :mod:`~oracle_core.run.waits.approvals`: the approval check (``@tool(approval=...)``,
  plugin defaults, ``[approvals]`` in ``oracle.toml``).
- :mod:`~oracle_core.run.waits.connections`: the connection check, and what a supplied
  credential settles.
- :mod:`~oracle_core.run.waits.opening`: what a new run does with its thread's operations.
- :mod:`~oracle_core.run.waits.settle`: decide, supply, cancel, each then resuming exactly
  once (what the facade calls).
- :mod:`~oracle_core.run.waits.resume`: the first step of a resumed run.
- :mod:`~oracle_core.run.waits.background`: background tool calls of this process.
"""
