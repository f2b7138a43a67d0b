"""``oracle plugins``: what is installed, its tier and tools, and what failed."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from oracle_core.cli.common import build_oracle, table

if TYPE_CHECKING:
    from oracle_core.plugins.registry import Registry


def plugins_report(
    registry: Registry,
    imports: Mapping[str, float] | None = None,
    slow: float | None = None,
) -> dict[str, Any]:
    """The registry as JSON-ready data: plugins, failures, warnings, hints and slow imports.

    Each failure lists every problem the validator found in the plugin (``problems``), the
    same sentences ``check_plugin`` reports; ``message`` is them all in one text. An MCP
    server's plugin also has ``mcp``: its transport, state, tools, restarts and last error.
    ``hints`` say what would make a plugin easier for capability search to find (no
    examples, no ``when_to_use``, a summary that only repeats the name): advice, not
    warnings, so ``check_plugin`` does not fail on them.

    ``imports`` are the plugins' import times by name (from
    :func:`~oracle_core.plugins.loader.import_times`): each plugin has ``import_seconds``
    (``null`` for one given in code), and ``slow_imports`` lists those over ``slow``
    seconds (``ORACLE_SLOW_IMPORT_SECONDS``; default 0.5), slowest first, failed plugins
    included.
    """
    from oracle_core.plugins.findability import findability_advice
    from oracle_core.plugins.mcp.adapter import MCPPlugin
    from oracle_core.settings import DEFAULT_SLOW_IMPORT_SECONDS

    warned = {(w.plugin, w.field) for w in registry.warnings}
    hints = [
        {"plugin": h.plugin, "field": h.field, "message": h.message}
        for p in registry
        if p.visibility != "silent"
        for h in findability_advice(p.manifest, p.tools)
        if (h.plugin, h.field) not in warned
    ]

    over = DEFAULT_SLOW_IMPORT_SECONDS if slow is None else slow
    times = dict(imports or {})
    slow_imports = [
        {"plugin": name, "seconds": round(seconds, 3)}
        for name, seconds in sorted(times.items(), key=lambda item: -item[1])
        if seconds > over
    ]
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
                "import_seconds": round(times[p.name], 3) if p.name in times else None,
                **({"mcp": p.obj.status()} if isinstance(p.obj, MCPPlugin) else {}),
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
        "hints": hints,
        "slow_imports": slow_imports,
        "slow_import_seconds": over,
    }


def tools_cell(plugin: dict[str, Any]) -> str:
    """A plugin's tools for the table; a tool whose tier differs from its plugin's says so."""
    names = [
        t["name"] if t["visibility"] == plugin["visibility"] else f"{t['name']} ({t['visibility']})"
        for t in plugin["tools"]
    ]
    return ", ".join(names) or "-"


def mcp_table(servers: list[dict[str, Any]]) -> str:
    """The MCP servers' states: started lazily, so ``idle`` until first loaded or called."""
    rows = [
        [
            p["name"],
            p["mcp"]["transport"],
            p["mcp"]["state"],
            str(p["mcp"]["tools"]),
            str(p["mcp"]["restarts"]),
            p["mcp"]["error"] or (f"{len(p['mcp']['problems'])} tools left out"
                                  if p["mcp"]["problems"] else "-"),
        ]
        for p in servers
    ]  # fmt: skip
    return table(rows, ["SERVER", "TRANSPORT", "STATE", "TOOLS", "RESTARTS", "NOTE"])


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")
def plugins_command(as_json: bool) -> None:
    """List installed plugins with their tier and tools, and plugins that failed to load."""
    from oracle_core.capabilities.surface import Catalog, config_problem
    from oracle_core.plugins.loader import import_times

    with import_times() as imports:
        oracle = build_oracle(surface=Catalog())  # listed whatever [surface] says, to fix it
    report = plugins_report(oracle.registry, imports, oracle.settings.slow_import_seconds)
    report["surface_error"] = config_problem(oracle.settings, oracle.registry)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    if report["plugins"]:
        rows = [
            [
                p["name"],
                p["distribution"] or ("(mcp)" if "mcp" in p else "(code)"),
                p["version"] or "-",
                p["visibility"],
                tools_cell(p),
                ", ".join(p["routes"]) or "-",
            ]
            for p in report["plugins"]
        ]
        headers = ["PLUGIN", "DISTRIBUTION", "VERSION", "TIER", "TOOLS", "ROUTES"]
        click.echo(table(rows, headers))
        if any(p["routes"] for p in report["plugins"]):
            click.echo("(routes are served under /plugins/<plugin> by `oracle serve`)")
        servers = [p for p in report["plugins"] if "mcp" in p]
        if servers:
            click.echo(f"\nMCP servers ({len(servers)}):")
            click.echo(mcp_table(servers))
    elif not report["failures"]:
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
    if report["surface_error"]:
        click.echo(f"\nSurface: {report['surface_error']}")
    if report["slow_imports"]:
        over = f"over {report['slow_import_seconds']:g} s, ORACLE_SLOW_IMPORT_SECONDS"
        click.echo(f"\nSlow imports ({len(report['slow_imports'])}; {over}; every start waits):")
        for slow in report["slow_imports"]:
            click.echo(f"  {slow['plugin']}: {slow['seconds']:.2f} s")
    if report["warnings"]:
        click.echo(f"\nWarnings ({len(report['warnings'])}):")
        for w in report["warnings"]:
            click.echo(f"  {w['plugin']}: {w['message']}")
    if report["hints"]:
        click.echo(f"\nHard to find ({len(report['hints'])}; see `oracle search --explain`):")
        for h in report["hints"]:
            click.echo(f"  {h['plugin']}: {h['field']} {h['message']}")
