"""What ``oracle ask`` shows while a run works: the progress line, the answer streamed as
it arrives (on a terminal), and with ``-v`` each tool call, result and load (on stderr).

Standard output carries only the answer, so ``oracle ask ... > file`` and pipes get it
whole; everything else goes to standard error. A line of streamed text is ended before
anything else is drawn on the terminal, so the progress line never overwrites it.
"""

from __future__ import annotations

from typing import TextIO

import click

from oracle_core.cli.progress import Progress
from oracle_core.cli.transcript import status_of, tool_line
from oracle_core.values.events import Event, ModelCallStarted, TextDelta


class AskView:
    """Shows the events of one ``oracle ask`` run as they come.

    Args:
        progress: the progress line (on stderr; drawn only on a terminal).
        out: where the answer goes (stdout).
        err: where tool lines go (stderr).
        verbose: show each tool call, result and load (``-v``).

    Attributes:
        streamed: the last model call's text was written to ``out`` as it came (so the
            answer need not be printed again).
    """

    def __init__(
        self, progress: Progress, out: TextIO, err: TextIO, *, verbose: bool = False
    ) -> None:
        self.progress = progress
        self.out = out
        self.err = err
        self.verbose = verbose
        self.streamed = False
        self._open_line = False

    def event(self, event: Event) -> None:
        """Show ``event``: text streamed to ``out``; tool lines (``-v``) and status updates."""
        if isinstance(event, TextDelta):
            if event.text:
                self.progress.hide()
                self.out.write(event.text)
                self.out.flush()
                self.streamed = True
                self._open_line = not event.text.endswith("\n")
            return
        if isinstance(event, ModelCallStarted):
            self.streamed = False  # only the last step's text is the answer
        line = tool_line(event) if self.verbose else None
        status = status_of(event)
        if line is not None or status is not None:
            self.end_line()
        if line is not None:
            self.progress.hide()
            click.echo(line, file=self.err, color=self.err.isatty())
        if status is not None:
            self.progress.show(status)

    def end_line(self) -> None:
        """End a line of streamed text that is still open (before anything else is drawn)."""
        if self._open_line:
            self.out.write("\n")
            self.out.flush()
            self._open_line = False
