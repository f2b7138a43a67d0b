"""What ``oracle ask`` and ``oracle chat`` say on stderr about what they cannot use: one line
for each plugin left out, so a plugin that failed never vanishes without a word (the model
would only be told "unknown capability"). ``-q``/``--quiet`` hides these lines and the
oracle's other warnings; errors still print.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from oracle_core.cli.transcript import shorten

if TYPE_CHECKING:
    from oracle_core.errors import PluginError

_F = TypeVar("_F", bound=Callable[..., Any])

_REASON_WIDTH = 240


def quiet_option(command: _F) -> _F:
    """``-q``/``--quiet``: no line for a plugin left out, nor any other warning."""
    return click.option(
        "--quiet",
        "-q",
        is_flag=True,
        help="Say nothing of plugins left out or other warnings (errors still print).",
    )(command)


@contextlib.contextmanager
def quieted(quiet: bool) -> Iterator[None]:
    """With ``quiet``, let only errors of the oracle's loggers through while it lasts."""
    logger = logging.getLogger("oracle_core")
    level = logger.level
    if quiet:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def left_out_line(failure: PluginError) -> str:
    """One line for a plugin left out: its name, why (shortened to one line), where to look."""
    reason = " ".join("; ".join(failure.problems).split())
    return (
        f"oracle: plugin {failure.plugin!r} is left out: {shorten(reason, _REASON_WIDTH)} "
        "(`oracle plugins` says more)"
    )


def report_left_out(failures: Sequence[PluginError], *, quiet: bool) -> None:
    """Print :func:`left_out_line` on stderr for each of ``failures``, unless ``quiet``."""
    if quiet:
        return
    for failure in failures:
        click.echo(left_out_line(failure), err=True)
