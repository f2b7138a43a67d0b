"""The rows of the settings table (:mod:`oracle_core.settings.table`) that say how far a run
may go, how runs share a thread and resume, and where threads are kept."""

from __future__ import annotations

from typing import Literal

from oracle_core.settings.setting import Setting
from oracle_core.values.limits import DEFAULT_MAX_RESULT_BYTES, DEFAULT_MAX_TEXT_BYTES

DEFAULT_RESUME_MAX_AGE = 3600.0
"""Seconds since a cut-off run last saved a step within which ``oracle serve`` resumes it."""

_LIMITS = "([limits.md](limits.md))"


def _count(name: str, variable: str, default: int, unit: str, help: str) -> Setting:
    """A run limit that counts something: a whole number of at least 1."""
    return Setting(
        name, help, variable, kind="int", default=default, owner="run_limits", unit=unit,
        minimum=1,
    )  # fmt: skip


def _time(name: str, variable: str, default: float, help: str) -> Setting:
    """A run limit in seconds, above 0."""
    return Setting(
        name, help, variable, kind="float", default=default, owner="run_limits",
        unit="seconds", positive=True,
    )  # fmt: skip


def _usage(
    name: str, variable: str, kind: Literal["int", "float"], unit: str, help: str
) -> Setting:
    """A usage limit of one run: unset is no limit, and 0 is allowed."""
    return Setting(
        name, help, variable, kind=kind, owner="run_limits",
        shown_default="unset: no limit", unit=unit, minimum=0,
    )  # fmt: skip


RUN_SETTINGS: tuple[Setting, ...] = (
    _count(
        "max_steps",
        "ORACLE_MAX_STEPS",
        12,
        "model calls",
        "model calls one run may make before it stops without an answer",
    ),
    _count(
        "tool_concurrency",
        "ORACLE_TOOL_CONCURRENCY",
        4,
        "tool calls",
        "tool calls of one model response that run at once",
    ),
    _time(
        "tool_timeout",
        "ORACLE_TOOL_TIMEOUT",
        60.0,
        "seconds a tool call may take (a tool may set its own)",
    ),
    _count(
        "max_result_bytes",
        "ORACLE_MAX_RESULT_BYTES",
        DEFAULT_MAX_RESULT_BYTES,
        "bytes",
        "bytes of one tool result kept; the rest is cut with a note saying how much",
    ),
    _count(
        "max_text_bytes",
        "ORACLE_MAX_TEXT_BYTES",
        DEFAULT_MAX_TEXT_BYTES,
        "bytes",
        "bytes of one model reply kept; tool-call arguments longer than this are refused, "
        "never run",
    ),
    _time(
        "run_timeout",
        "ORACLE_RUN_TIMEOUT",
        600.0,
        "seconds one run may take, model, tools and middleware included; then it fails and "
        "frees its thread",
    ),
    _count(
        "sync_tool_workers",
        "ORACLE_SYNC_TOOL_WORKERS",
        8,
        "threads",
        "threads for sync tools; a hung tool holds one until it returns, and when all are "
        "held new sync calls fail at once saying so",
    ),
    Setting(
        "sync_tool_share",
        "threads one plugin's sync tools may hold at once (running, queued, or timed out and "
        "still running), so a plugin whose tools hang blocks only itself; see "
        "[Sync tools](#sync-tools)",
        "ORACLE_SYNC_TOOL_SHARE",
        "sync_tools.share",
        kind="int",
        shown_default="half of `ORACLE_SYNC_TOOL_WORKERS`, at least 1 (else `share` of "
        "`[sync_tools]` in `oracle.toml`)",
        unit="threads",
        minimum=1,
    ),
    Setting(
        "busy_wait",
        "seconds a run waits for its thread while another run (in any process) holds it, "
        "before it fails as busy",
        "ORACLE_BUSY_WAIT",
        kind="float",
        default=30.0,
        owner="run_limits",
        unit="seconds",
        minimum=0,
    ),
    _time(
        "lease_ttl",
        "ORACLE_LEASE_TTL",
        30.0,
        "seconds a run's hold (lease) on its thread lasts unless renewed (every third of "
        "it); a dead process's thread is taken over this long after it died",
    ),
    Setting(
        "resume_runs",
        "`oracle serve` resumes a run cut off by the end of its process (a crash, a deploy) "
        "from its last saved step, every half `ORACLE_LEASE_TTL`; `0`: such a run is marked "
        "`interrupted` instead (see [scale-out.md](scale-out.md#runs-that-outlive-their-process))",
        "ORACLE_RESUME_RUNS",
        kind="flag",
        default=True,
    ),
    Setting(
        "resume_max_age",
        "seconds since a cut-off run last saved a step within which it is resumed; an older "
        "one is marked `interrupted`",
        "ORACLE_RESUME_MAX_AGE",
        kind="float",
        default=DEFAULT_RESUME_MAX_AGE,
        unit="seconds",
        positive=True,
    ),
    Setting(
        "resume_concurrency",
        "cut-off runs one `oracle serve` resumes at once; more finish a failover sooner "
        "(`bench/scale_out.py`: 12 runs, 4 at a time, took 8.8 s from the kill) at the cost "
        "of that many runs' work at once",
        "ORACLE_RESUME_CONCURRENCY",
        kind="int",
        default=4,
        unit="runs",
        minimum=1,
    ),
    _usage(
        "max_requests",
        "ORACLE_MAX_REQUESTS",
        "int",
        "model requests",
        "model requests one run may make in all, resumed parts included; `0`: none (see "
        "[limits.md](limits.md))",
    ),
    _usage(
        "max_input_tokens",
        "ORACLE_MAX_INPUT_TOKENS",
        "int",
        "tokens",
        f"prompt tokens one run may use {_LIMITS}",
    ),
    _usage(
        "max_output_tokens",
        "ORACLE_MAX_OUTPUT_TOKENS",
        "int",
        "tokens",
        f"completion tokens one run may use {_LIMITS}",
    ),
    _usage(
        "max_total_tokens",
        "ORACLE_MAX_TOTAL_TOKENS",
        "int",
        "tokens",
        f"prompt plus completion tokens one run may use {_LIMITS}",
    ),
    _usage(
        "max_tool_calls",
        "ORACLE_MAX_TOOL_CALLS",
        "int",
        "tool calls",
        f"tool calls one run may run; a response whose calls would cross it runs none {_LIMITS}",
    ),
    _usage(
        "max_cost",
        "ORACLE_MAX_COST",
        "float",
        "US dollars",
        "US dollars one run may cost, priced from litellm's shipped table; a model it does "
        f"not price has no cost limit, and a warning says so {_LIMITS}",
    ),
    Setting(
        "database_url",
        "a `postgresql://` URL: threads, runs, operations and credentials in Postgres, shared "
        "by every process using it (`pip install 'oracle-core-runtime[postgres]'`; see "
        "[scale-out.md](scale-out.md))",
        "ORACLE_DATABASE_URL",
        kind="database_url",
        shown_default="unset: SQLite under `ORACLE_HOME`",
    ),
    Setting(
        "database_pool_size",
        "connections one process opens to Postgres at most",
        "ORACLE_DATABASE_POOL_SIZE",
        kind="int",
        default=10,
        unit="connections",
        minimum=1,
    ),
)
"""The run limits, sync-tool threads, thread holds, resuming and the store, in the order
docs/operators.md lists them."""
