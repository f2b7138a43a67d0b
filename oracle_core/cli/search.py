"""``oracle search``: what ``search_capabilities`` would find for a request."""

from __future__ import annotations

import json
import sys

import click

from oracle_core.cli.common import build_oracle, table


def _queries(arguments: tuple[str, ...]) -> list[str]:
    if arguments == ("-",):
        return [line.strip() for line in sys.stdin if line.strip()]
    return [a for a in arguments if a.strip()]


@click.command("search")
@click.argument("queries", nargs=-1, required=True)
@click.option(
    "--limit", "-k", default=6, show_default=True, type=click.IntRange(1, 50),
    help="Candidates a query at most (the model gets 6).",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="One JSON object a line, with scores.")
def search_command(queries: tuple[str, ...], limit: int, as_json: bool) -> None:
    """Search the installed capabilities as the model would, one result set a QUERY.

    Give `-` to read one query a line from standard input. The candidates are those the
    search_capabilities meta-tool returns (with --limit 6), best first, each with the tools
    that matched; a query nothing fits gets none.
    """
    from oracle_core.capabilities.meta_tools import search_results
    from oracle_core.capabilities.search import CapabilitySearch

    texts = _queries(queries)
    if not texts:
        raise click.UsageError("give at least one non-empty query (or - and queries on stdin)")
    oracle = build_oracle()
    search = CapabilitySearch.for_settings(oracle.registry, oracle.settings)
    found = search.search(texts, limit)
    results = search_results(texts, found, loaded=(), scores=True)
    if as_json:
        for item in results:
            click.echo(json.dumps(item, ensure_ascii=False))
        return
    for number, item in enumerate(results):
        if number:
            click.echo()
        click.echo(f"query: {item['query']}")
        if not item["results"]:
            click.echo(f"  {item['note']}")
            continue
        rows = [
            [str(rank), f"{r['score']:.4f}", r["name"], ", ".join(r["tools"]) or "-", r["summary"]]
            for rank, r in enumerate(item["results"], 1)
        ]
        text = table(rows, ["#", "SCORE", "PLUGIN", "TOOLS", "SUMMARY"])
        click.echo("\n".join(f"  {line}" for line in text.splitlines()))
