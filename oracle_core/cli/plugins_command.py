"""``oracle plugins``: what is installed, its tier and tools, and what failed."""

from __future__ import annotations

import json
from typing import Any

import click

from oracle_core.cli.common import build_oracle, table
from oracle_core.plugins.registry import Registry


def plugins_report(registry: Registry) -> dict[str, Any]:
    """The registry as JSON-ready data: plugins, failures and warnings.

    Each failure lists every problem the validator found in the plugin (``problems``), the
    same sentences ``check_plugin`` reports; ``message`` is them all in one text.
    """
    return {
        "plugins": [
            {
                "name": p.name,
                "distribution": p.source.distribution,
                "version": p.manifest.version,
                "visibility": p.visibility,
                "summary": p.manifest.summary,
                "tools": [
                    {"name": t.name, "visibility": t.visibility or p.visibility} for t in p.tools
                ],
                "middleware": len(p.middleware),
                "routes": [r.path for r in p.routes],
            }
            for p in registry
        ],
        "failures": [
            {
                "plugin": f.plugin,
                "distribution": f.distribution,
                "error": type(f).__name__,
                "message": str(f),
                "problems": list(f.problems),
            }
            for f in registry.failures
        ],
        "warnings": [
            {"plugin": w.plugin, "field": w.field, "message": w.message} for w in registry.warnings
        ],
    }


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
def plugins_command(as_json: bool) -> None:
    """List installed plugins with their tier and tools, and plugins that failed to load."""
    report = plugins_report(build_oracle().registry)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    if report["plugins"]:
        rows = [
            [
                p["name"],
                p["distribution"] or "(code)",
                p["version"] or "-",
                p["visibility"],
                ", ".join(t["name"] for t in p["tools"]) or "-",
            ]
            for p in report["plugins"]
        ]
        click.echo(table(rows, ["PLUGIN", "DISTRIBUTION", "VERSION", "TIER", "TOOLS"]))
    else:
        click.echo(
            "No plugins installed. Install one (pip install oracle-plugin-NAME) or "
            "scaffold one (oracle plugin new NAME)."
        )
    if report["failures"]:
        click.echo(f"\nFailed to load ({len(report['failures'])}):")
        for f in report["failures"]:
            dist = f" [{f['distribution']}]" if f["distribution"] else ""
            problems = f["problems"]
            if len(problems) == 1:
                click.echo(f"  {f['plugin']}{dist}: {problems[0]}")
                continue
            click.echo(f"  {f['plugin']}{dist}: {len(problems)} problems")
            for problem in problems:
                click.echo(f"    - {problem}")
    if report["warnings"]:
        click.echo(f"\nWarnings ({len(report['warnings'])}):")
        for w in report["warnings"]:
            click.echo(f"  {w['plugin']}: {w['message']}")
