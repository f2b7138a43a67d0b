"""``oracle ask``: one user message worked to an answer."""

from __future__ import annotations

import asyncio
import secrets
import sys
import time
from typing import TYPE_CHECKING

import click

from oracle_core.cli.ask_schema import read_schema
from oracle_core.cli.common import (
    api_base_option,
    api_key_option,
    build_oracle,
    json_option,
    key_option,
    model_call_options,
    model_option,
    run_options,
    stored_key,
    thread_option_of,
)
from oracle_core.cli.operations import print_outcome
from oracle_core.cli.progress import Progress
from oracle_core.cli.transcript import status_of

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle
    from oracle_core.store.base import Checkpointer
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

ASK_THREAD_PREFIX = "ask-"
"""How the id of a conversation ``oracle ask`` started begins (``-c`` continues the latest)."""


def new_ask_thread() -> str:
    """A fresh thread id for one ``oracle ask``: ``ask-`` then its local time and a suffix."""
    return f"{ASK_THREAD_PREFIX}{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


async def latest_ask_thread(store: Checkpointer) -> str | None:
    """The most recently updated conversation started by ``oracle ask``, if there is one."""
    return next((t for t in await store.threads() if t.startswith(ASK_THREAD_PREFIX)), None)


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
    output: OutputSchema | None = None,
    attachments: list[Attachment] | None = None,
    options: RunOptions | None = None,
) -> RunResult:
    events: list[Event] = []
    async with oracle, Progress(sys.stderr) as progress:
        progress.show("thinking...")
        if thread is None:  # -c: the latest ask conversation, else a fresh one (as llm)
            thread = await latest_ask_thread(oracle.checkpointer) or new_ask_thread()
        stream = oracle.stream(
            thread,
            prompt,
            user_id=user,
            text_deltas=False,
            output_type=output,
            attachments=attachments or (),
            options=options,
        )
        async for event in stream:
            events.append(event)
            status = status_of(event)
            if status is not None:
                progress.show(status)
    from oracle_core.values.result import RunResult

    return RunResult.from_events(thread, events)


@click.command("ask")
@click.argument("prompt", required=False)
@click.option(
    "-c",
    "--continue",
    "continue_latest",
    is_flag=True,
    help="Continue the most recent conversation started by `oracle ask`.",
)
@thread_option_of(None, "Continue the conversation of thread NAME (made if new).", "NAME")
@model_option
@api_base_option
@api_key_option
@key_option
@model_call_options
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
def ask_command(
    prompt: str | None,
    continue_latest: bool,
    thread: str | None,
    model: str | None,
    api_base: str | None,
    api_key: str | None,
    key_name: str | None,
    max_tokens: int | None,
    timeout: float | None,
    retries: int | None,
    as_json: bool,
    user: str,
    attachments: tuple[str, ...],
    schema: str | None,
) -> None:
    """Ask PROMPT and print the answer (with --json, the whole turn).

    Each ask starts a fresh conversation (a thread named ask-<time>-<suffix>); -c continues
    the most recent one started by ask, --thread NAME continues (or starts) thread NAME.

    Text piped on standard input comes before PROMPT, a blank line between (as llm joins
    them); give - (or pipe text without a PROMPT) to read the whole prompt from it. On a
    terminal a progress line on stderr shows what the oracle is doing. A run that stops to
    wait (an approval, a connection) prints what it waits for and how to settle it
    (`oracle operations approve ID`) and exits with status 3; Ctrl-C exits with 130.

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
    if key_name is not None:
        api_key = stored_key(key_name, api_key)
    oracle = build_oracle(require_model=True, model=model, api_base=api_base, api_key=api_key)
    check_images(oracle.model.name, files)
    options = run_options(max_tokens, timeout, retries)
    try:
        result = asyncio.run(_ask(oracle, thread, text, user, output, files, options))
    except KeyboardInterrupt:  # Ctrl-C: one line, and the status shells expect (128 + SIGINT)
        click.echo("oracle: interrupted", err=True)
        sys.exit(INTERRUPTED_EXIT)
    print_outcome(result, as_json)  # a waiting run: what it waits for, how to decide
    if result.truncated and not as_json:  # --json says so in its "truncated" field
        click.echo(TRUNCATED, err=True)


TRUNCATED = (
    "oracle: the answer was cut off at the model's output limit (finish_reason: length); "
    "raise it with --max-tokens, or ask for a shorter answer"
)
"""What ``oracle ask`` prints on stderr after an answer the output limit cut short."""
