"""A one-line progress indicator on a terminal ("⠋ thinking..."), for ``ask`` and ``chat``.

Drawn only when its stream is a terminal, so pipes, files and tests that read the output get
none of its control characters.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TextIO

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
"""The spinner's frames, drawn in turn."""

_ERASE = "\r\x1b[2K"  # back to the line's start and clear it


class Progress:
    """Shows what the oracle is doing on one line of ``stream`` while it works.

    Use it as an async context manager; :meth:`show` sets the text, :meth:`hide` clears the
    line (call it before writing anything else to the terminal).

    Args:
        stream: where to draw (``sys.stderr`` for ``ask``, so stdout stays the answer).
        enabled: draw at all; default: only when ``stream`` is a terminal.
        interval: seconds between frames.
    """

    def __init__(
        self, stream: TextIO, *, enabled: bool | None = None, interval: float = 0.1
    ) -> None:
        self.stream = stream
        self.enabled = stream.isatty() if enabled is None else enabled
        self.interval = interval
        self._status: str | None = None
        self._frame = 0
        self._shown = False
        self._task: asyncio.Task[None] | None = None

    def show(self, status: str) -> None:
        """Show ``status`` with the spinner from now on (drawn at once)."""
        self._status = status
        self._draw()

    def hide(self) -> None:
        """Clear the indicator's line and stop showing it until the next :meth:`show`."""
        self._status = None
        if self._shown:
            self.stream.write(_ERASE)
            self.stream.flush()
            self._shown = False

    def _draw(self) -> None:
        if not self.enabled or self._status is None:
            return
        frame = FRAMES[self._frame % len(FRAMES)]
        self.stream.write(f"{_ERASE}{frame} {self._status}")
        self.stream.flush()
        self._shown = True

    async def _spin(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self._frame += 1
            self._draw()

    async def __aenter__(self) -> Progress:
        if self.enabled:
            self._task = asyncio.create_task(self._spin(), name="oracle-progress")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.hide()
