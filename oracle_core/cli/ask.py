"""``oracle ask``: one user message worked to an answer."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from oracle_core.cli.ask_schema import read_schema
from oracle_core.cli.ask_view import AskView
from oracle_core.cli.common import (
    api_base_option,
    api_key_option,
    json_option,
    key_option,
    model_call_options,
    model_option,
    run_options,
    talking_oracle,
    thread_option_of,
)
from oracle_core.cli.conversations import (
    ASK_THREAD_PREFIX,
    latest_conversation,
    new_conversation,
)
from oracle_core.cli.notices import quiet_option, quieted, report_left_out
from oracle_core.cli.operations import print_outcome
from oracle_core.cli.progress import Progress
from oracle_core.cli.run_flags import checked_options, run_flags

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle
    from oracle_core.values.attachments import Attachment
    from oracle_core.values.events import Event
    from oracle_core.values.output import OutputSchema
    from oracle_core.values.result import RunResult
    from oracle_core.values.run_options import RunOptions


def read_prompt(prompt: str | None) -> str:
    """The prompt: ``prompt``, with text piped on standard input before it (as llm does).

    ``-`` (or no ``prompt`` with a pipe) reads the whole prompt from standard input. A
    ``prompt`` with piped text is the piped text, a blank line, then ``prompt``: ``cat
    notes.txt | oracle ask "summarise this"`` sends the notes and the instruction after them.

    Raises:
        click.UsageError: no prompt given on a terminal, or an empty one.
    """
    if prompt == "-":
        prompt = sys.stdin.read()
    elif sys.stdin.isatty():
        if prompt is None:
            raise click.UsageError("give a PROMPT, or - (or a pipe) to read it from stdin")
    else:
        piped = sys.stdin.read().strip("\n")
        parts = [p for p in (piped, (prompt or "").strip("\n")) if p.strip()]
        prompt = "\n\n".join(parts)
    if not prompt.strip():
        raise click.UsageError("the prompt is empty: give some text")
    return prompt.strip("\n")


INTERRUPTED_EXIT = 130
"""Exit status of an ``oracle ask`` stopped by Ctrl-C (128 + SIGINT, as shells report it)."""


def new_ask_thread() -> str:
    """A fresh thread id for one ``oracle ask``: ``ask-`` then its local time and a suffix."""
    return new_conversation(ASK_THREAD_PREFIX)


def read_attachments(paths: tuple[str, ...]) -> list[Attachment]:
    """The files of ``-a``, each read and checked now, before any model is called.

    Raises:
        click.BadParameter: a file that cannot be read, is too large, or is neither an
            image nor UTF-8 text (the message names it).
    """
    from oracle_core.errors import AttachmentError
    from oracle_core.values.attachments import Attachment

    try:
        return [Attachment.from_path(path) for path in paths]
    except AttachmentError as error:
        raise click.BadParameter(str(error), param_hint="'-a' / '--attachment'") from None


def check_images(model: str, attachments: list[Attachment]) -> None:
    """Refuse images for a model litellm's table lists as not reading them.

    Raises:
        click.UsageError: naming the model and the image.
    """
    images = [a.name for a in attachments if a.is_image]
    if not images:
        return
    from oracle_core.models.cost import PriceTable

    if PriceTable().accepts_images(model) is False:
        raise click.UsageError(
            f"the model {model} does not read images (litellm's model table says so), so "
            f"{images[0]} cannot be attached: choose a model with vision (--model), or "
            "attach text files only"
        )


async def _ask(
    oracle: Oracle,
    thread: str | None,
    prompt: str,
    user: str,
    how: AskHow,
    output: OutputSchema | None = None,
    attachments: list[Attachment] | None = None,
    options: RunOptions | None = None,
) -> tuple[RunResult, bool]:
    """The run's result, and whether its answer was streamed to stdout as it came."""
    events: list[Event] = []
    async with oracle:
        report_left_out(oracle.registry.failures, quiet=how.quiet)
        async with Progress(sys.stderr) as progress:
            view = AskView(progress, sys.stdout, sys.stderr, verbose=how.verbose)
            progress.show("thinking...")
            if thread is None:  # -c: the latest conversation, else a fresh one (as llm)
                thread = await latest_conversation(oracle.checkpointer) or new_ask_thread()
            stream = oracle.stream(
                thread,
                prompt,
                user_id=user,
                text_deltas=how.stream,
                output_type=output,
                attachments=attachments or (),
                options=options,
            )
            async for event in stream:
                events.append(event)
                view.event(event)
            view.end_line()
    from oracle_core.values.result import RunResult

    return RunResult.from_events(thread, events), view.streamed


@dataclass(frozen=True)
class AskHow:
    """How ``oracle ask`` shows its run.

    Attributes:
        stream: print the answer's text as it arrives (a terminal, not ``--no-stream``).
        verbose: show tool calls, results and loads on stderr as they happen (``-v``).
        quiet: no line for a plugin left out, nor other warnings (``-q``).
    """

    stream: bool = False
    verbose: bool = False
    quiet: bool = False


@click.command("ask")
@click.argument("prompt", required=False)
@click.option(
    "-c",
    "--continue",
    "continue_latest",
    is_flag=True,
    help="Continue the most recent conversation started by `oracle ask` or `oracle chat`.",
)
@thread_option_of(None, "Continue the conversation of thread NAME (made if new).", "NAME")
@model_option
@run_flags
@api_base_option
@api_key_option
@key_option
@model_call_options
@click.option(
    "--no-stream",
    is_flag=True,
    help="Print the answer once it is whole (on a terminal it streams as it arrives).",
)
@json_option
@click.option("--user", default="default", show_default=True, help="Who the run acts for.")
@click.option(
    "-a",
    "--attachment",
    "attachments",
    multiple=True,
    metavar="FILE",
    help="Send FILE with the prompt: an image (PNG, JPEG, GIF, WebP) for a model with "
    "vision, or a UTF-8 text file. Repeat for more.",
)
@click.option(
    "--schema",
    metavar="SCHEMA",
    help="Answer with JSON for SCHEMA: a JSON Schema inline, a .json file, or fields as "
    "'name, age int, bio: their biography' (types str, int, float, bool).",
)
@click.option("-v", "--verbose", is_flag=True, help="Show tool calls, results and loads on stderr.")
@quiet_option
def ask_command(
    prompt: str | None,
    continue_latest: bool,
    thread: str | None,
    model: str | None,
    system: str | None,
    options: tuple[tuple[str, str], ...],
    api_base: str | None,
    api_key: str | None,
    key_name: str | None,
    max_tokens: int | None,
    timeout: float | None,
    retries: int | None,
    no_stream: bool,
    as_json: bool,
    user: str,
    attachments: tuple[str, ...],
    schema: str | None,
    verbose: bool,
    quiet: bool,
) -> None:
    """Ask PROMPT and print the answer (with --json, the whole turn).

    `oracle "PROMPT"` is the same: a first word that is no command runs ask, as llm does.

    Each ask starts a fresh conversation (a thread named ask-<time>-<suffix>); -c continues
    the most recent one started by ask or chat, --thread NAME continues (or starts) thread
    NAME.

    Text piped on standard input comes before PROMPT, a blank line between (as llm joins
    them); give - (or pipe text without a PROMPT) to read the whole prompt from it. On a
    terminal the answer streams as it arrives (--no-stream waits for it whole; --json and
    output to a pipe or file always wait), and a progress line on stderr shows what the
    oracle is doing; -v also shows each tool call and result there. A plugin that failed to
    load is named on stderr, one line each (-q hides these lines and other warnings). A
    run that stops to wait (an approval, a connection) prints what it waits for and how to
    settle it (`oracle operations approve ID`) and exits with status 3; Ctrl-C exits with
    130.

    -m/--model picks the model, -s/--system opens the system prompt with your own text
    instead of the oracle's instructions, -o KEY VALUE sets a request option of the model
    (-o temperature 0.2; repeatable; an option the model does not take is refused before
    any call).

    -a FILE attaches a file to the prompt: an image goes to the model as an image (a
    model litellm lists without vision is refused before the call), a text file as text.

    With --schema the answer is JSON valid for SCHEMA (docs/structured-output.md): the
    model is asked for it, and an answer that is not gets one repair turn; still wrong, the
    run fails (exit 1) saying what is wrong.

    --max-tokens, --timeout and --retries set this run's model calls, over oracle.toml's
    [models."<model>"] and the environment (docs/models.md).
    """
    if continue_latest and thread is not None:
        raise click.UsageError("give -c/--continue or --thread NAME, not both")
    if thread is None and not continue_latest:
        thread = new_ask_thread()
    output = read_schema(schema) if schema is not None else None
    text = read_prompt(prompt)
    files = read_attachments(attachments)
    with quieted(quiet):
        oracle = talking_oracle(
            model=model, api_base=api_base, api_key=api_key, key_name=key_name, system=system
        )
        check_images(oracle.model.name, files)
        chosen = checked_options(oracle.model.name, options)
        run = run_options(max_tokens, timeout, retries, chosen)
        stream = not (no_stream or as_json) and output is None and sys.stdout.isatty()
        how = AskHow(stream=stream, verbose=verbose, quiet=quiet)
        try:
            result, streamed = asyncio.run(
                _ask(oracle, thread, text, user, how, output, files, run)
            )
        except KeyboardInterrupt:  # Ctrl-C: one line, and the status shells expect (128 + SIGINT)
            click.echo("oracle: interrupted", err=True)
            sys.exit(INTERRUPTED_EXIT)
    print_outcome(result, as_json, streamed=streamed)  # a waiting run: what it waits for
    if result.truncated and not as_json:  # --json says so in its "truncated" field
        click.echo(TRUNCATED, err=True)


TRUNCATED = (
    "oracle: the answer was cut off at the model's output limit (finish_reason: length); "
    "raise it with --max-tokens, or ask for a shorter answer"
)
"""What ``oracle ask`` prints on stderr after an answer the output limit cut short."""
