"""``oracle ask``: one user message worked to an answer."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

import click

from oracle_core.cli.ask_schema import read_schema
from oracle_core.cli.common import (
    api_base_option,
    api_key_option,
    build_oracle,
    json_option,
    model_option,
    thread_option,
)
from oracle_core.cli.operations import print_outcome
from oracle_core.cli.progress import Progress
from oracle_core.cli.transcript import status_of

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle
    from oracle_core.values.events import Event
    from oracle_core.values.output import OutputSchema
    from oracle_core.values.result import RunResult


def read_prompt(prompt: str | None) -> str:
    """The prompt: ``prompt`` itself, or standard input when it is ``-`` or absent and piped.

    Raises:
        click.UsageError: no prompt given on a terminal, or an empty one.
    """
    if prompt is None or prompt == "-":
        if prompt is None and sys.stdin.isatty():
            raise click.UsageError("give a PROMPT, or - (or a pipe) to read it from stdin")
        prompt = sys.stdin.read()
    if not prompt.strip():
        raise click.UsageError("the prompt is empty: give some text")
    return prompt.strip("\n")


async def _ask(
    oracle: Oracle, thread: str, prompt: str, user: str, output: OutputSchema | None = None
) -> RunResult:
    events: list[Event] = []
    async with oracle, Progress(sys.stderr) as progress:
        progress.show("thinking...")
        stream = oracle.stream(thread, prompt, user_id=user, text_deltas=False, output_type=output)
        async for event in stream:
            events.append(event)
            status = status_of(event)
            if status is not None:
                progress.show(status)
    from oracle_core.values.result import RunResult

    return RunResult.from_events(thread, events)


@click.command("ask")
@click.argument("prompt", required=False)
@thread_option
@model_option
@api_base_option
@api_key_option
@json_option
@click.option("--user", default="default", show_default=True, help="Who the run acts for.")
@click.option(
    "--schema",
    metavar="SCHEMA",
    help="Answer with JSON for SCHEMA: a JSON Schema inline, a .json file, or fields as "
    "'name, age int, bio: their biography' (types str, int, float, bool).",
)
def ask_command(
    prompt: str | None,
    thread: str,
    model: str | None,
    api_base: str | None,
    api_key: str | None,
    as_json: bool,
    user: str,
    schema: str | None,
) -> None:
    """Ask PROMPT on a thread and print the answer (with --json, the whole turn).

    Give - (or pipe text without a PROMPT) to read the prompt from standard input. On a
    terminal a progress line on stderr shows what the oracle is doing. A run that stops to
    wait (an approval, a connection) prints what it waits for and how to settle it
    (`oracle operations approve ID`) and exits with status 3.

    With --schema the answer is JSON valid for SCHEMA (docs/structured-output.md): the
    model is asked for it, and an answer that is not gets one repair turn; still wrong, the
    run fails (exit 1) saying what is wrong.
    """
    output = read_schema(schema) if schema is not None else None
    text = read_prompt(prompt)
    oracle = build_oracle(require_model=True, model=model, api_base=api_base, api_key=api_key)
    result = asyncio.run(_ask(oracle, thread, text, user, output))
    print_outcome(result, as_json)  # a waiting run: what it waits for, how to decide
