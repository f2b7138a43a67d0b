"""How the ``oracle`` command reports what the operator can fix: one line, no traceback.

A bad setting (:class:`~oracle_core.ConfigError`: ``oracle.toml`` or an environment
variable; :class:`~oracle_core.SurfaceError`: a ``[surface]`` that cannot be honoured) and a
bad thread id exit with status 2, like a usage error; a missing optional
extra exits with status 1 and names the extra to install; a file under an ``ORACLE_HOME``
that cannot be written exits with status 2 naming ``ORACLE_HOME``. Anything else is a bug
and keeps its traceback.
"""

from __future__ import annotations

from typing import Any, NoReturn

import click

from oracle_core.cli.extras import extra_for, missing_extra_message
from oracle_core.errors import ConfigError, InvalidThreadIdError, InvalidUserIdError, SurfaceError

CONFIG_EXIT = 2
"""Exit status of a command stopped by a bad setting (as click's usage errors)."""


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``oracle: message`` on stderr and exit with ``code``."""
    click.echo(f"oracle: {message}", err=True)
    raise SystemExit(code)


class OracleGroup(click.Group):
    """A click group whose commands report settings errors and missing extras in one line,
    and where a first word that is no command runs ``ask`` (:mod:`oracle_core.cli.default_command`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Put ``ask`` first when the arguments do not start with a command (as llm does)."""
        from oracle_core.cli.default_command import with_default

        if not ctx.resilient_parsing:  # shell completion sees the words as typed
            args = with_default(args, self.commands)
        return super().parse_args(ctx, args)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """The command of ``args``; a slip of a command's name says how to ask it instead."""
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as error:
            from oracle_core.cli.default_command import near_command

            word = args[0]
            near = near_command(word, self.commands)
            if near is None:
                raise
            raise click.UsageError(
                f"No such command {word!r}. Did you mean {near!r}? To ask the oracle "
                f"{word!r} instead, run: oracle ask {word}",
                ctx,
            ) from error

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; turn the operator's errors into one line and an exit status."""
        from oracle_core.environment import quiet_chatty_loggers

        quiet_chatty_loggers()
        try:
            return super().invoke(ctx)
        except (ConfigError, SurfaceError, InvalidThreadIdError, InvalidUserIdError) as error:
            fail(str(error), CONFIG_EXIT)
        except ImportError as error:
            if extra_for(error) is None:
                raise
            fail(missing_extra_message(error, ctx.invoked_subcommand))
        except OSError as error:
            import os

            from oracle_core.store.unavailable import home_write_error

            # A cache or database under an ORACLE_HOME that cannot be written; any other
            # OSError keeps its traceback.
            home = home_write_error(error, os.environ)
            if home is None:
                raise
            fail(str(home), CONFIG_EXIT)
