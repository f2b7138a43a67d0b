"""``oracle demo``: a conversation that shows each step of the discovery loop."""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import TYPE_CHECKING

import click

from oracle_core.cli.common import api_base_option, build_oracle, model_option
from oracle_core.cli.transcript import tool_line
from oracle_core.values.events import Event, ModelCallStarted, RunFinished, UsageEvent
from oracle_core.values.messages import Usage

if TYPE_CHECKING:
    from oracle_core.oracle import Oracle


def demo_prompts(oracle: Oracle, count: int, plugins: tuple[str, ...]) -> list[str]:
    """User messages for the demo: the first example of on-demand plugins.

    The plugins named in ``plugins`` if any, else the first ones in registration order.
    """
    chosen = [
        p
        for p in oracle.registry
        if p.visibility == "on-demand"
        and p.manifest.examples
        and (not plugins or p.name in plugins)
    ]
    return [p.manifest.examples[0].user for p in chosen][:count]


def describe(event: Event) -> str | None:
    """One event as a line of the demo's transcript."""
    if isinstance(event, ModelCallStarted):
        t = event.tokens
        return (
            f"  model call {event.step}: shown {len(event.tools)} tools ({', '.join(event.tools)})\n"
            f"    prompt, by the oracle's count (o200k_base): {t['total']} tokens = Tier-1 "
            f"{t['tier1']} + meta-tools {t['meta_tools']} + tool schemas {t['tool_schemas']} + "
            f"messages {t['messages']}"
        )
    line = tool_line(event, limit=160)
    if line is not None:
        return line
    if isinstance(event, UsageEvent):
        return click.style(usage_line(event.usage), dim=True)
    if isinstance(event, RunFinished):
        if event.status != "completed":
            return click.style(f"  ✗ {event.status}: {event.error}", fg="red")
        return click.style(f"  answer: {event.answer}", bold=True)
    return None


def usage_line(usage: Usage) -> str:
    """The usage of one model call, saying whose count it is."""
    figures = f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion"
    if usage.estimated:
        return (
            f"    usage: ~{figures}, estimated (the model reported none, so the oracle counted "
            "the request as sent, JSON framing included)"
        )
    return (
        f"    usage the provider reported: {figures} (its own tokenizer and message format, "
        "so it differs from the oracle's count)"
    )


@click.command("demo")
@model_option
@api_base_option
@click.option("--prompts", "count", default=2, show_default=True, help="How many questions to ask.")
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    help="Ask about this plugin (repeatable); default: the first on-demand ones.",
)
def demo_command(
    model: str | None, api_base: str | None, count: int, plugins: tuple[str, ...]
) -> None:
    """Run a short conversation that shows discovery, loading and tool calls step by step.

    Without ORACLE_MODEL it uses the built-in scripted stand-in model, offline.
    """
    # The stand-in is what this command is for: chosen by name, so no "no model" warning.
    chosen = model or os.environ.get("ORACLE_MODEL") or "demo"
    oracle = build_oracle(model=chosen, api_base=api_base)
    name = oracle.model.name
    stand_in = (
        " (the built-in scripted stand-in: set ORACLE_MODEL to use a real model)"
        if name == "demo"
        else ""
    )
    listed = oracle.registry.listed()
    click.echo(f"oracle demo with model {name}{stand_in}")
    click.echo(
        f"installed: {len(oracle.registry)} plugins; the model can discover {len(listed)} of them"
    )
    if oracle.tier1_block:
        click.echo("\nTier-1 block (always plugins, in every system prompt):")
        click.echo("\n".join(f"  | {line}" for line in oracle.tier1_block.splitlines()))
    prompts = demo_prompts(oracle, count, plugins)
    if not prompts:
        click.echo(
            "\nNo on-demand plugin with an example is installed: pip install one (see README)."
        )
        return
    thread = f"demo-{uuid.uuid4().hex[:8]}"

    async def conversation() -> bool:
        ok = True
        async with oracle:
            for prompt in prompts:
                click.echo(f"\nuser: {prompt}")
                async for event in oracle.stream(thread, prompt, text_deltas=False):
                    line = describe(event)
                    if line is not None:
                        click.echo(line)
                    if isinstance(event, RunFinished) and event.status != "completed":
                        ok = False
        return ok

    if not asyncio.run(conversation()):
        raise SystemExit(1)
    click.echo(
        f"\nThread {thread!r} is saved: `oracle prompt --thread {thread}` shows what the next call would get."
    )
