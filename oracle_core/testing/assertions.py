"""Assertions that read like the docs: what the model called, and what it was shown."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from oracle_core.testing.scripted import ModelCall
from oracle_core.values.events import ToolCallEvent, ToolResultEvent
from oracle_core.values.result import RunResult


def _arguments(event: ToolCallEvent) -> Any:
    try:
        return json.loads(event.arguments) if event.arguments.strip() else {}
    except json.JSONDecodeError:
        return event.arguments


def _describe(calls: list[ToolCallEvent]) -> str:
    if not calls:
        return "the model called no tool"
    return "the model called: " + ", ".join(f"{c.name}({c.arguments})" for c in calls)


def _readable(content: str) -> str:
    """A tool result as the model read it, an error shown as its text."""
    try:
        decoded = json.loads(content)
    except json.JSONDecodeError:
        return content
    if isinstance(decoded, dict) and isinstance(decoded.get("error"), str):
        return str(decoded["error"])
    return content


def _result_of(result: RunResult, call: ToolCallEvent) -> ToolResultEvent:
    return next(e for e in result.events if isinstance(e, ToolResultEvent) and e.id == call.id)


def _matching(
    result: RunResult, name: str, arguments: Mapping[str, Any] | str | None
) -> list[ToolCallEvent]:
    calls = [c for c in result.tool_calls if c.name == name]
    if arguments is None:
        return calls
    if isinstance(arguments, str):
        return [c for c in calls if c.arguments == arguments]
    return [c for c in calls if _arguments(c) == dict(arguments)]


def assert_tool_called(
    result: RunResult,
    name: str,
    arguments: Mapping[str, Any] | str | None = None,
    *,
    times: int | None = None,
) -> ToolResultEvent:
    """Assert the model called tool ``name`` in this run and the call reached the tool.

    Args:
        result: the run, from :func:`~oracle_core.testing.run_turn`.
        name: the tool.
        arguments: the exact arguments (compared as decoded JSON; raw text compares as
            written); ``None`` accepts any.
        times: how many matching calls there must be; ``None``: at least one.

    Returns:
        The result of the first matching call: ``content`` is what the model read back,
        ``is_error`` tells whether the tool failed.

    Raises:
        AssertionError: naming the calls the model did make, or saying that the capability
            gate refused the call (with the refusal the model read).
    """
    __tracebackhide__ = True
    wanted = (
        name
        if arguments is None
        else f"{name}({json.dumps(arguments) if not isinstance(arguments, str) else arguments})"
    )
    matching = _matching(result, name, arguments)
    if not matching:
        raise AssertionError(f"the model did not call {wanted}; {_describe(result.tool_calls)}")
    if times is not None and len(matching) != times:
        raise AssertionError(
            f"the model called {wanted} {len(matching)} time(s), not {times}; "
            f"{_describe(result.tool_calls)}"
        )
    outcome = _result_of(result, matching[0])
    if outcome.refused:
        raise AssertionError(
            f"the model called {wanted}, but the capability gate refused the call (its plugin "
            f"was not loaded when the model was asked): {_readable(outcome.content)}"
        )
    return outcome


def assert_tool_refused(result: RunResult, name: str) -> ToolResultEvent:
    """Assert the model called tool ``name`` and the capability gate refused to run it.

    Returns:
        The refusal the model read (``content``).

    Raises:
        AssertionError: when the model never called it, or a call of it ran.
    """
    __tracebackhide__ = True
    calls = _matching(result, name, None)
    if not calls:
        raise AssertionError(f"the model did not call {name}; {_describe(result.tool_calls)}")
    ran = [c for c in calls if not _result_of(result, c).refused]
    if ran:
        raise AssertionError(
            f"{name} was run, not refused: the model called {name}({ran[0].arguments}) while "
            "it was shown"
        )
    return _result_of(result, calls[0])


def assert_tool_not_called(result: RunResult, name: str) -> None:
    """Assert the model never called tool ``name`` in this run."""
    __tracebackhide__ = True
    calls = _matching(result, name, None)
    if calls:
        raise AssertionError(
            f"the model called {name} {len(calls)} time(s); {_describe(result.tool_calls)}"
        )


def _names(value: str | Iterable[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def assert_shown(
    call: ModelCall,
    *,
    tools: str | Iterable[str] = (),
    hidden: str | Iterable[str] = (),
    exactly: Iterable[str] | None = None,
    prompt: str | Iterable[str] = (),
) -> None:
    """Assert what the model was shown on one call (``oracle_model.request(step)``).

    Args:
        call: the model call to check.
        tools: tool names that must have been shown.
        hidden: tool names that must not have been shown.
        exactly: the whole set of tool names shown, meta-tools included (order aside).
        prompt: texts the system prompt must contain (e.g. a Tier-1 entry ``"**memory**"``).

    Raises:
        AssertionError: listing what was wrong and what was shown.
    """
    __tracebackhide__ = True
    shown = call.tool_names
    problems: list[str] = []
    missing = [t for t in _names(tools) if t not in shown]
    if missing:
        problems.append(f"did not show {', '.join(missing)}")
    leaked = [t for t in _names(hidden) if t in shown]
    if leaked:
        problems.append(f"showed {', '.join(leaked)}, which should be hidden")
    if exactly is not None:
        expected = set(exactly)
        extra, absent = sorted(set(shown) - expected), sorted(expected - set(shown))
        if extra or absent:
            detail = [f"extra: {', '.join(extra)}"] if extra else []
            detail += [f"missing: {', '.join(absent)}"] if absent else []
            problems.append(f"did not show exactly the tools expected ({'; '.join(detail)})")
    absent_text = [text for text in _names(prompt) if text not in call.system_prompt]
    if absent_text:
        problems.append(
            "has a system prompt without "
            + ", ".join(repr(t) for t in absent_text)
            + f"; the system prompt was:\n{call.system_prompt}"
        )
    if problems:
        raise AssertionError(
            f"{call.describe()} "
            + "; ".join(problems)
            + f". Tools shown: {', '.join(shown) or 'none'}"
        )
