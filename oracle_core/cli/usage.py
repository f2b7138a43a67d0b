"""``oracle usage``: tokens, cost, runs and tool calls per user, thread, model or plugin."""

from __future__ import annotations

import time
from typing import Any

import click

from oracle_core.cli.common import echo_json, json_option, table

_GROUPINGS = ("user", "thread", "model", "plugin")


def cost_text(group: dict[str, Any]) -> str:
    """A group's cost as people read it: ``unknown`` when no call had a known price, and
    ``$0.0123 + unknown`` when some had none."""
    cost, unpriced = group["cost"], group["unpriced_calls"]
    if cost is None:
        return "unknown"
    shown = f"${cost:.4f}"
    return f"{shown} + unknown" if unpriced else shown


def _row(group: dict[str, Any]) -> list[str]:
    return [
        group["key"] or "-",
        str(group["prompt_tokens"]),
        str(group["completion_tokens"]),
        cost_text(group),
        str(group["runs"]),
        str(group["model_calls"]),
        str(group["tool_calls"]),
    ]


@click.command("usage")
@click.option("--user", "user_id", metavar="USER", help="Only the usage of this user.")
@click.option(
    "--since",
    metavar="WHEN",
    help="Only usage from then on: 7d, 12h, 30m (ago), today, month (UTC), or an ISO date.",
)
@click.option(
    "--by",
    type=click.Choice(_GROUPINGS),
    default="user",
    show_default=True,
    help="Group by user, thread, model or plugin (plugin: tool calls only).",
)
@json_option
def usage_command(user_id: str | None, since: str | None, by: str, as_json: bool) -> None:
    """Show the tokens, cost, runs and tool calls recorded in the store's usage ledger.

    Every model call and tool call of every run is in the ledger (docs/usage.md), whichever
    process made it. Costs come from litellm's price table; a model it does not price is
    shown as unknown, never as $0. Budgets (`[budgets]` in oracle.toml) spend from the same
    ledger.
    """
    from oracle_core.cli.store_access import with_store
    from oracle_core.store.usage import parse_since, usage_report

    start = None
    if since is not None:
        try:
            start = parse_since(since, time.time())
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--since") from None
    report = with_store(
        lambda store: usage_report(store, by=by, user_id=user_id, since=start)  # type: ignore[arg-type]
    )
    if as_json:
        echo_json(report)
        return
    groups: list[dict[str, Any]] = report["groups"]  # type: ignore[assignment]
    if not groups:
        click.echo(
            "No usage recorded" + (" for that user or time." if user_id or since else " yet.")
        )
        return
    headers = [by.upper(), "TOKENS IN", "TOKENS OUT", "COST", "RUNS", "MODEL CALLS", "TOOL CALLS"]
    total: dict[str, Any] = report["total"]  # type: ignore[assignment]
    click.echo(table([*(_row(g) for g in groups), _row({**total, "key": "TOTAL"})], headers))
