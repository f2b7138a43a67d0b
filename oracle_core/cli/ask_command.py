"""``oracle ask``: one user message worked to an answer."""

from __future__ import annotations

import json
import sys

import click

from oracle_core.cli.common import (
    api_base_option,
    build_oracle,
    json_option,
    model_option,
    thread_option,
)


@click.command("ask")
@click.argument("prompt")
@thread_option
@model_option
@api_base_option
@json_option
@click.option("--user", default="default", show_default=True, help="Who the run acts for.")
def ask_command(
    prompt: str, thread: str, model: str | None, api_base: str | None, as_json: bool, user: str
) -> None:
    """Ask PROMPT on a thread and print the answer (with --json, the whole turn)."""
    oracle = build_oracle(model=model, api_base=api_base)
    result = oracle.run_sync(thread, prompt, user_id=user)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
    elif result.status == "completed":
        click.echo(result.answer)
    if result.status != "completed":
        click.echo(f"oracle: run {result.run_id} {result.status}: {result.error}", err=True)
        sys.exit(1)
