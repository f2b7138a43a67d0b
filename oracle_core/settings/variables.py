"""Environment variables named ``ORACLE_*`` that nothing reads: each a warning with the closest
known name, so ``ORACLE_MODLE=openai/gpt-4o`` is not silently ignored (the oracle would run
without a model, or with another one).

:data:`KNOWN_VARIABLES` lists every variable the core reads (a test keeps it equal to the
names in the source). ``ORACLE_PLUGIN_<NAME>__<KEY>`` variables belong to plugins and are
only checked for their shape: a single underscore before the key (``ORACLE_PLUGIN_WEATHER_UNITS``)
names no key, and is warned about. ``ORACLE_TEST_*`` variables belong to test harnesses
and are left alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from oracle_core.settings.unknown import closest

KNOWN_VARIABLES: frozenset[str] = frozenset(
    {
        "ORACLE_ALLOWED_HOSTS", "ORACLE_ALLOW_MODEL_REQUESTS", "ORACLE_API_BASE",
        "ORACLE_API_KEY", "ORACLE_API_TOKEN", "ORACLE_BODY_TIMEOUT", "ORACLE_BUSY_WAIT",
        "ORACLE_DATABASE_POOL_SIZE", "ORACLE_DATABASE_URL", "ORACLE_DISABLE_PLUGINS",
        "ORACLE_EMBEDDING_API_BASE", "ORACLE_EMBEDDING_MODEL", "ORACLE_FORWARDED_ALLOW_IPS",
        "ORACLE_HEADER_TIMEOUT",
        "ORACLE_HOME", "ORACLE_HOOK_TIMEOUT", "ORACLE_LEASE_TTL", "ORACLE_LIST_LIMIT",
        "ORACLE_LOAD_PLUGINS", "ORACLE_LOG_FORMAT", "ORACLE_MAX_BODY_BYTES", "ORACLE_MAX_COST",
        "ORACLE_MAX_HISTORY_MESSAGES", "ORACLE_MAX_INPUT_TOKENS", "ORACLE_MAX_MESSAGE_CHARS",
        "ORACLE_MAX_OUTPUT_TOKENS", "ORACLE_MAX_REQUESTS", "ORACLE_MAX_RESULT_BYTES",
        "ORACLE_MAX_STEPS", "ORACLE_MAX_TEXT_BYTES", "ORACLE_MAX_TOKENS", "ORACLE_MAX_TOOL_CALLS",
        "ORACLE_MAX_TOTAL_TOKENS", "ORACLE_MODEL", "ORACLE_MODEL_CLIENT",
        "ORACLE_MODEL_RETRIES", "ORACLE_MODEL_TIMEOUT", "ORACLE_PROXY_HEADERS",
        "ORACLE_RESUME_CONCURRENCY", "ORACLE_RESUME_MAX_AGE",
        "ORACLE_RESUME_RUNS", "ORACLE_ROOT_PATH", "ORACLE_RUN_TIMEOUT",
        "ORACLE_SECRET_KEY", "ORACLE_SHUTDOWN_GRACE", "ORACLE_SLOW_IMPORT_SECONDS",
        "ORACLE_STRICT_PLUGINS", "ORACLE_SYNC_TOOL_SHARE", "ORACLE_SYNC_TOOL_WORKERS",
        "ORACLE_TOOL_CONCURRENCY", "ORACLE_TOOL_TIMEOUT", "ORACLE_TRACE_CONTENT",
        "ORACLE_TRACE_PLUGINS",
    }
)  # fmt: skip
"""Every ``ORACLE_*`` variable the core reads (docs/operators.md lists them)."""

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
