"""``oracle config``: the settings as resolved from the environment and ``oracle.toml``.

Secrets are never printed: an API key or a database password shows only whether it is set.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import click

from oracle_core.cli.common import json_option, load_settings, redact_url
from oracle_core.cli.errors import CONFIG_EXIT

if TYPE_CHECKING:
    from oracle_core.settings import Settings

_SET = "set"
_UNSET = "not set"


def _key_source(settings: Settings) -> str:
    if settings.api_key:
        return f"{_SET} (ORACLE_API_KEY or --api-key)"
    provider = [v for v in ("OPENAI_API_KEY",) if settings.env.get(v)]
    return f"{_SET} ({provider[0]})" if provider else _UNSET


def model_calls(settings: Settings) -> dict[str, Any]:
    """The effective model-call settings of the configured model (of every model when none
    is configured): each key's value and where it was set (docs/models.md)."""
    from oracle_core.settings.model_tables import BUILT_IN, DEFAULTS, EVERY_MODEL, KEYS

    model = settings.resolve_model(settings.model) if settings.model else EVERY_MODEL
    calls = settings.model_call_settings(None if model == EVERY_MODEL else model)
    shown: dict[str, Any] = {"model": model}
    for key in KEYS:
        value = getattr(calls, key)
        if value is None:
            shown[key] = {"value": DEFAULTS[key], "source": BUILT_IN}
        else:
            shown[key] = {"value": value, "source": calls.sources[key]}
        if isinstance(shown[key]["value"], tuple):
            shown[key]["value"] = list(shown[key]["value"])
    return shown


def resolved_settings(settings: Settings) -> dict[str, Any]:
    """What the oracle would run with, as JSON-ready data without any secret."""
    from oracle_core.plugins.discovery import find_entry_points, select
    from oracle_core.settings.environment import read_variable
    from oracle_core.settings.table import by_variable

    sources = find_entry_points()
    chosen, unknown = select(sources, settings.load_plugins, settings.disable_plugins)
    config = settings.config_path
    sections = settings.configured_plugins()
    return {
        "home": str(settings.home),
        "config_file": {"path": str(config), "exists": config.exists()},
        "plugin_config_sections": sections,
        "store": (
            {"kind": "postgres", "url": redact_url(settings.database_url)}
            if settings.database_url
            else {"kind": "sqlite", "path": str(settings.database_path)}
        ),
        "model": settings.model,
        # Read again as the table reads it: it is checked with the settings, kept by no field.
        "model_client": read_variable(settings.env, by_variable("ORACLE_MODEL_CLIENT")),
        "api_base": settings.api_base,
        "api_key": _key_source(settings),
        "plugins": {
            "installed": [s.name for s in sources],
            "selected": [s.name for s in chosen],
            "load_plugins": (
                list(settings.load_plugins) if settings.load_plugins is not None else None
            ),
            "disable_plugins": list(settings.disable_plugins),
            "unknown_in_load_plugins": unknown,
            "strict": settings.strict,
            "trace": settings.trace_plugins,
            "hook_timeout": settings.hook_timeout,
        },
        "tier1_budget": settings.tier1_budget,
        "list_limit": settings.list_limit,
        "embedding_model": settings.embedding_model,
        "run_limits": asdict(settings.run_limits),
        "model_calls": model_calls(settings),
    }


def _render(data: dict[str, Any]) -> str:
    plugins = data["plugins"]
    store = data["store"]
    config = data["config_file"]
    lines = [
        f"home:          {data['home']}",
        f"config file:   {config['path']}" + ("" if config["exists"] else " (none)"),
        f"store:         {store['kind']} {store.get('path') or store.get('url')}",
        f"model:         {data['model'] or 'none configured (set ORACLE_MODEL or --model)'}",
        f"model client:  {data['model_client']}",
        f"api base:      {data['api_base'] or '-'}",
        f"api key:       {data['api_key']}",
        f"plugins:       {len(plugins['selected'])} selected of {len(plugins['installed'])} "
        f"installed: {', '.join(plugins['selected']) or '-'}",
    ]
    if plugins["load_plugins"] is not None:
        lines.append(f"  ORACLE_LOAD_PLUGINS:    {', '.join(plugins['load_plugins']) or '(none)'}")
    if plugins["disable_plugins"]:
        lines.append(f"  ORACLE_DISABLE_PLUGINS: {', '.join(plugins['disable_plugins'])}")
    if plugins["unknown_in_load_plugins"]:
        lines.append(f"  not installed: {', '.join(plugins['unknown_in_load_plugins'])}")
    if data["plugin_config_sections"]:
        lines.append(f"  configured:   {', '.join(data['plugin_config_sections'])}")
    lines.append(
        f"  strict: {plugins['strict']}, trace: {plugins['trace']}, "
        f"hook timeout: {plugins['hook_timeout']:g} s"
    )
    # A usage limit that is not set (None) is no limit: it is left out.
    limits = ", ".join(f"{k} {v:g}" for k, v in data["run_limits"].items() if v is not None)
    lines += [
        f"tier-1 budget: {data['tier1_budget']} tokens; list limit: {data['list_limit']} plugins",
        f"run limits:    {limits}",
    ]
    return "\n".join(lines + _model_call_lines(data["model_calls"]))


_SHOWN_KEYS = {
    "timeout": ("timeout", " s"),
    "retries": ("retries", ""),
    "retry_on": ("retry on", ""),
    "max_tokens": ("max tokens", ""),
    "temperature": ("temperature", ""),
}


def _model_call_lines(calls: dict[str, Any]) -> list[str]:
    model = calls["model"]
    lines = [f"model calls:   {'every model' if model == '*' else model}"]
    for key, (label, unit) in _SHOWN_KEYS.items():
        value = calls[key]["value"]
        if value is None:
            lines.append(f"  {label + ':':13}not sent (the server's own default)")
            continue
        if isinstance(value, list):
            text = ", ".join(value) or "nothing"
        else:
            text = f"{value:g}{unit}" if isinstance(value, float) else f"{value}{unit}"
        lines.append(f"  {label + ':':13}{text} ({calls[key]['source']})")
    return lines


@click.command("config")
@json_option
@click.option(
    "--check",
    is_flag=True,
    help="Read every setting and try what they point at (store, model, plugins' tables, "
    "OTLP endpoints): one line each; exit 2 if anything would stop a command.",
)
def config_command(as_json: bool, check: bool) -> None:
    """Show the resolved settings: paths, model, store, plugins selected (never secrets)."""
    if check:
        from oracle_core.cli.config_check import check_everything

        findings = check_everything()
        if as_json:
            click.echo(json.dumps([asdict(f) for f in findings], indent=2))
        else:
            click.echo("\n".join(f.line() for f in findings))
        if any(f.level == "error" for f in findings):
            raise SystemExit(CONFIG_EXIT)
        return
    data = resolved_settings(load_settings())
    click.echo(json.dumps(data, indent=2) if as_json else _render(data))
