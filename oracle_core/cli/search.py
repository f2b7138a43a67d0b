"""``oracle search``: what the search meta-tool would find for a request."""

from __future__ import annotations

import json
import sys

import click

from oracle_core.cli.common import build_oracle, table
from oracle_core.plugins.core_tools import SEARCH_CAPABILITIES

_HELP = f"""Search the installed capabilities as the model would, one result set a QUERY.

    Give `-` to read one query a line from standard input. The candidates are those the
    {SEARCH_CAPABILITIES} meta-tool returns (with --limit 6), best first, each with the tools
    that matched and whether it is a strong or weak match; a query nothing fits gets none.
    With --explain each candidate also shows the words each manifest field matched, the
    closest embedded text, and its score's lexical and semantic parts.
    """


def _queries(arguments: tuple[str, ...]) -> list[str]:
    if arguments == ("-",):
        return [line.strip() for line in sys.stdin if line.strip()]
    return [a for a in arguments if a.strip()]


@click.command("search", help=_HELP)
@click.argument("queries", nargs=-1, required=True)
@click.option(
    "--limit", "-k", default=6, show_default=True, type=click.IntRange(1, 50),
    help="Candidates a query at most (the model gets 6).",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="One JSON object a line, with scores.")
@click.option(
    "--explain", is_flag=True,
    help="Show which fields and words matched and the lexical and semantic parts of each score.",
)  # fmt: skip
def search_command(queries: tuple[str, ...], limit: int, as_json: bool, explain: bool) -> None:
    """Search the installed capabilities as the model would (its help is ``_HELP``)."""
    from oracle_core.capabilities.meta_tools import search_results
    from oracle_core.capabilities.search import CapabilitySearch

    texts = _queries(queries)
    if not texts:
        raise click.UsageError("give at least one non-empty query (or - and queries on stdin)")
    oracle = build_oracle()
    search = CapabilitySearch.for_settings(oracle.registry, oracle.settings)
    found = search.search(texts, limit)
    results = search_results(texts, found, loaded=(), scores=True)
    reasons = search.explain(texts, limit) if explain else [[] for _ in texts]
    if as_json:
        for item, why in zip(results, reasons, strict=True):
            for entry, one in zip(item["results"], why, strict=False):  # none without --explain
                entry["explain"] = one
            click.echo(json.dumps(item, ensure_ascii=False))
        return
    for number, (item, why) in enumerate(zip(results, reasons, strict=True)):
        if number:
            click.echo()
        click.echo(f"query: {item['query']}")
        if not item["results"]:
            click.echo(f"  {item['note']}")
            continue
        rows = [
            [str(rank), f"{r['score']:.4f}", r["name"], ", ".join(r["tools"]) or "-", r["match"],
             r["summary"]]
            for rank, r in enumerate(item["results"], 1)
        ]  # fmt: skip
        text = table(rows, ["#", "SCORE", "PLUGIN", "TOOLS", "MATCH", "SUMMARY"])
        click.echo("\n".join(f"  {line}" for line in text.splitlines()))
        for one in why:
            click.echo(_explained(one))


def _explained(one: dict[str, object]) -> str:
    """One candidate's explanation as indented lines."""
    parts = one["parts"]
    assert isinstance(parts, dict)
    shares = ", ".join(f"{k} {v:+.2f}" for k, v in parts.items() if v)
    lines = [
        f"  {one['name']}: lexical {one['lexical']:+.2f}, semantic {one['semantic']:+.2f}, "
        f"sentence {one['sentence']:+.2f} ({shares or 'no parts'})",
        f"    word evidence {one['evidence']}, cosine {one['cosine']}",
    ]
    closest = one.get("closest")
    if isinstance(closest, dict):
        lines.append(f"    closest in meaning: {closest['field']} (cosine {closest['cosine']})")
    words = one["words"]
    assert isinstance(words, dict)
    for field, hits in words.items():
        lines.append(f"    {field}: {', '.join(hits)}")
    if not words:
        lines.append("    no query word matched: found by meaning only")
    return "\n".join(lines)
