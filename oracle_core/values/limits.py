"""The limits an operator sets on a run."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_RESULT_BYTES = 64 * 1024
"""How much of one tool result reaches the model and the store (64 KiB)."""

DEFAULT_MAX_TEXT_BYTES = 256 * 1024
"""How much of one model reply's text (and of one tool call's arguments) is kept (256 KiB)."""


@dataclass(frozen=True)
class RunLimits:
    """How far one run may go.

    Attributes:
        max_steps: model calls a run may make before it stops without an answer.
        tool_concurrency: tool calls of one model response that may run at once.
        tool_timeout: seconds a tool call may take unless the tool sets its own ``timeout``.
        max_result_bytes: UTF-8 bytes of one tool result kept; the rest is cut with a note
            saying how much was dropped.
        max_text_bytes: UTF-8 bytes kept of one model reply's text and of one tool call's
            arguments (arguments over it are refused as too long, never cut).
        run_timeout: seconds one run may take, model calls, tools and middleware included;
            past it the run fails and frees its thread.
        sync_tool_workers: threads the oracle keeps for sync tools (a hung tool holds one
            until it returns; see :class:`~oracle_core.run.pool.SyncToolPool`).
        busy_wait: seconds a run waits for its thread while another run (in any process)
            holds it, before it fails as busy.
        lease_ttl: seconds a run's hold on its thread lasts unless renewed (it is renewed
            every third of that while the run lives; a dead process's hold expires).
        max_requests: model calls one run may make in all, its resumed parts included
            (``max_steps`` counts the calls of each start or resume, and a run that reaches
            it stops without an answer; ``max_requests`` stops a run before the call past
            it, so ``0`` lets a run make no model call at all). ``None``: no limit.
        max_input_tokens: prompt tokens one run may use, summed over its model calls.
        max_output_tokens: completion tokens one run may use.
        max_total_tokens: prompt plus completion tokens one run may use.
        max_tool_calls: tool calls one run may run; a response whose calls would take the
            run past it runs none of them.
        max_cost: US dollars one run may cost, priced with litellm's shipped price table
            (:mod:`oracle_core.models.cost`); a model the table does not price has no cost
            limit, and a warning says so.

    The usage limits (``max_requests`` to ``max_cost``) are checked by
    :class:`~oracle_core.run.usage_limits.UsageLimits`: a run past one fails with
    :class:`~oracle_core.errors.UsageLimitExceeded` (docs/limits.md).
    """

    max_steps: int = 12
    tool_concurrency: int = 4
    tool_timeout: float = 60.0
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES
    run_timeout: float = 600.0
    sync_tool_workers: int = 8
    busy_wait: float = 30.0
    lease_ttl: float = 30.0
    max_requests: int | None = None
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    max_total_tokens: int | None = None
    max_tool_calls: int | None = None
    max_cost: float | None = None

    def __post_init__(self) -> None:
        for name in (
            "max_steps",
            "tool_concurrency",
            "max_result_bytes",
            "max_text_bytes",
            "sync_tool_workers",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)!r}")
        for name in ("tool_timeout", "run_timeout", "lease_ttl"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)!r}")
        if self.busy_wait < 0:
            raise ValueError(f"busy_wait must not be negative, not {self.busy_wait!r}")
        for name in USAGE_LIMITS:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number or None, not {value!r}")
            if name != "max_cost" and not isinstance(value, int):
                raise ValueError(f"{name} must be a whole number or None, not {value!r}")
            if not value >= 0 or value == float("inf"):
                raise ValueError(f"{name} must be a finite number of at least 0, not {value!r}")

    @property
    def usage(self) -> dict[str, float]:
        """The usage limits that are set, by field name (empty: none is set)."""
        return {n: v for n in USAGE_LIMITS if (v := getattr(self, n)) is not None}


USAGE_LIMITS = (
    "max_requests",
    "max_input_tokens",
    "max_output_tokens",
    "max_total_tokens",
    "max_tool_calls",
    "max_cost",
)
"""The :class:`RunLimits` fields that limit a run's usage (``None`` each: no limit)."""
