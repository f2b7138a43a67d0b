"""The flags ``ask`` and ``chat`` share with llm's: ``-s/--system`` and ``-o KEY VALUE``.

``-s`` replaces the opening of the system prompt (the oracle's instructions); the Tier-1
block of the always-on capabilities still follows it, or the model could not find its tools.
``-o`` sets a request option of the model (``-o temperature 0.2``), repeatable, checked
against what the model takes before any call (:mod:`oracle_core.models.options`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

_F = TypeVar("_F", bound=Callable[..., Any])


def run_flags(command: _F) -> _F:
    """``-s/--system TEXT`` and ``-o/--option KEY VALUE`` (repeatable)."""
    command = click.option(
        "-o",
        "--option",
        "options",
        type=(str, str),
        multiple=True,
        metavar="KEY VALUE",
        help="A request option of the model (-o temperature 0.2), checked against what the "
        "model takes; repeat for more. A value is read as JSON when it parses "
        "(-o stop '[\"END\"]'), else as text.",
    )(command)
    return click.option(
        "-s",
        "--system",
        metavar="TEXT",
        help="Open the system prompt with TEXT instead of the oracle's instructions (the "
        "block of always-on capabilities still follows).",
    )(command)


def checked_options(model: str, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The ``-o`` options for ``model``, checked and typed.

    Raises:
        click.BadParameter: an option the model does not take, or a value that does not fit
            (exit 2, naming the option and the fix).
    """
    if not pairs:
        return {}
    from oracle_core.models.options import ModelOptionError, model_options

    try:
        return model_options(model, pairs)
    except ModelOptionError as error:
        raise click.BadParameter(str(error), param_hint="'-o' / '--option'") from None
