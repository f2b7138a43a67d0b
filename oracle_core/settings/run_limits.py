"""The run limits of the environment: how far a run may go (docs/limits.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oracle_core.settings.reading import env_number
from oracle_core.values.limits import RunLimits

RUN_LIMIT_VARIABLES: tuple[tuple[str, str, type, str], ...] = (
    ("ORACLE_MAX_STEPS", "max_steps", int, "model calls"),
    ("ORACLE_TOOL_CONCURRENCY", "tool_concurrency", int, "tool calls"),
    ("ORACLE_TOOL_TIMEOUT", "tool_timeout", float, "seconds"),
    ("ORACLE_MAX_RESULT_BYTES", "max_result_bytes", int, "bytes"),
    ("ORACLE_MAX_TEXT_BYTES", "max_text_bytes", int, "bytes"),
    ("ORACLE_RUN_TIMEOUT", "run_timeout", float, "seconds"),
    ("ORACLE_SYNC_TOOL_WORKERS", "sync_tool_workers", int, "threads"),
    ("ORACLE_BUSY_WAIT", "busy_wait", float, "seconds"),
    ("ORACLE_LEASE_TTL", "lease_ttl", float, "seconds"),
)
"""The environment variables that set :class:`~oracle_core.values.limits.RunLimits` fields
(each a count of at least 1 or a time above 0, except ``busy_wait``, which may be 0)."""

USAGE_LIMIT_VARIABLES: tuple[tuple[str, str, type, str], ...] = (
    ("ORACLE_MAX_REQUESTS", "max_requests", int, "model requests"),
    ("ORACLE_MAX_INPUT_TOKENS", "max_input_tokens", int, "tokens"),
    ("ORACLE_MAX_OUTPUT_TOKENS", "max_output_tokens", int, "tokens"),
    ("ORACLE_MAX_TOTAL_TOKENS", "max_total_tokens", int, "tokens"),
    ("ORACLE_MAX_TOOL_CALLS", "max_tool_calls", int, "tool calls"),
    ("ORACLE_MAX_COST", "max_cost", float, "US dollars"),
)
"""The environment variables of the usage limits (docs/limits.md): unset or empty is no
limit, and each may be 0 (a run with ``ORACLE_MAX_REQUESTS=0`` makes no model call)."""


def run_limits(env: Mapping[str, str]) -> RunLimits:
    """The run limits ``env`` sets (the defaults of :class:`RunLimits` for the others).

    Raises:
        ConfigError: a variable that is not a number in its range, naming it.
    """
    values: dict[str, Any] = {}
    for variable, name, kind, unit in USAGE_LIMIT_VARIABLES:
        if (env.get(variable) or "").strip():
            values[name] = env_number(env, variable, kind, kind(0), minimum=0, unit=unit)
    defaults = RunLimits()
    for variable, name, kind, unit in RUN_LIMIT_VARIABLES:
        default = getattr(defaults, name)
        if name == "busy_wait":
            value = env_number(env, variable, float, default, minimum=0, unit=unit)
        elif kind is int:
            value = env_number(env, variable, int, default, minimum=1, unit=unit)
        else:
            value = env_number(env, variable, float, default, positive=True, unit=unit)
        values[name] = value
    return RunLimits(**values)
