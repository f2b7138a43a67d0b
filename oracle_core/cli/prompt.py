"""``oracle prompt``: exactly what the next model call of a thread would get, in tokens."""

from __future__ import annotations

import asyncio
from typing import Any

import click

from oracle_core.cli.common import build_oracle, echo_json, json_option, thread_option
from oracle_core.cli.errors import fail


def _surface_lines(surface: dict[str, Any]) -> list[str]:
    if surface.get("kind") != "specialist":
        return ["Surface: catalog (meta-tools, Tier-1 block, tools shown once loaded)"]
    named = ", ".join(surface["tools"])
    return [f"Surface: specialist, exactly {len(surface['tools'])} tool(s): {named}",
            "  (no meta-tools, no Tier-1 block; any other tool is refused)"]  # fmt: skip


def _render(report: dict[str, Any]) -> str:
    tokens = report["tokens"]
    loaded = ", ".join(report["loaded_plugins"]) or "nothing"
    specialist = report["surface"].get("kind") == "specialist"
    prompt_note = (
        "no Tier-1 block on a specialist surface"
        if specialist
        else f"{tokens['tier1']} tokens of Tier-1 block"
    )
    lines = [
        f"Thread {report['thread_id']!r} (loaded: {loaded}), model {report['model']}",
        *_surface_lines(report["surface"]),
        f"Tokens used by the thread so far: {report['thread_usage']['prompt_tokens']} prompt + "
        f"{report['thread_usage']['completion_tokens']} completion",
        "",
        f"=== System prompt ({prompt_note}) ===",
        report["system_prompt"],
        "",
        f"=== Tools ({tokens['meta_tools']} tokens of meta-tools, {tokens['tool_schemas']} of tool schemas) ===",
    ]
    width = max(len(name) for name in tokens["per_tool"])
    for name, count in tokens["per_tool"].items():
        lines.append(f"  {name.ljust(width)}  {count:>5}")
    lines += [
        "",
        f"=== Messages: {tokens['messages']} tokens (instructions included) ===",
        f"Total: {tokens['total']} tokens",
    ]
    lines += [f"Warning: {w}" for w in report["warnings"]]
    return "\n".join(lines)


@click.command("prompt")
@thread_option
@json_option
@click.pass_context
def prompt_command(ctx: click.Context, thread: str, as_json: bool) -> None:
    """Show the exact system prompt and tools the next model call of a thread gets.

    Without --thread: those of a thread's first call. A --thread that no saved thread has
    is an error naming it (exit 1), as `oracle threads show` has it.
    """
    named = ctx.get_parameter_source("thread") is not click.core.ParameterSource.DEFAULT
    oracle = build_oracle()

    async def report() -> dict[str, Any] | None:
        try:
            if named and thread not in await oracle.checkpointer.threads():
                return None
            return await oracle.prompt_report(thread)
        finally:
            await oracle.close()

    data = asyncio.run(report())
    if data is None:
        fail(f"no thread {thread!r} (oracle threads lists them; without --thread, the "
             "prompt of a new thread's first call is shown)")  # fmt: skip
    if as_json:
        echo_json(data)
    else:
        click.echo(_render(data))
