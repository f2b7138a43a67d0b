"""``oracle chat``: an interactive terminal conversation that shows tool calls as they happen."""

from __future__ import annotations

import asyncio

import click

from oracle_core.cli.common import api_base_option, build_oracle, model_option, thread_option
from oracle_core.cli.transcript import tool_line
from oracle_core.run.events import Event, ModelCallStarted, RunFinished, TextDelta


def render(event: Event, *, verbose: bool) -> str | None:
    """How one event shows in the terminal (``None``: not shown)."""
    if isinstance(event, TextDelta):
        return event.text
    line = tool_line(event)
    if line is not None:
        return f"\n{line}"
    if isinstance(event, ModelCallStarted) and verbose:
        return click.style(
            f"\n  [step {event.step}: {len(event.tools)} tools, {event.tokens.get('total', 0)} prompt tokens]",
            dim=True,
        )
    if isinstance(event, RunFinished):
        if event.status != "completed":
            return click.style(f"\n  ✗ {event.status}: {event.error}", fg="red")
        usage = event.usage
        return click.style(
            f"\n  [{usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens]",
            dim=True,
        )
    return None


@click.command("chat")
@thread_option
@model_option
@api_base_option
@click.option(
    "--verbose", "-v", is_flag=True, help="Also show each model call and its prompt tokens."
)
def chat_command(thread: str, model: str | None, api_base: str | None, verbose: bool) -> None:
    """Talk with the oracle on a thread; /exit or Ctrl-D quits."""
    oracle = build_oracle(model=model, api_base=api_base)

    async def session() -> None:
        async with oracle:
            click.echo(f"oracle chat on thread {thread!r} with {oracle.model.name}; /exit quits.")
            while True:
                try:
                    line = await asyncio.to_thread(input, "\nyou> ")
                except EOFError:
                    break
                if line.strip() in ("/exit", "/quit"):
                    break
                if not line.strip():
                    continue
                click.echo("oracle> ", nl=False)
                async for event in oracle.stream(thread, line):
                    shown = render(event, verbose=verbose)
                    if shown is not None:
                        click.echo(shown, nl=False)
                click.echo()

    try:
        asyncio.run(session())
    except KeyboardInterrupt:
        click.echo()
