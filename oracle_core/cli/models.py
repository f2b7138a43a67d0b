"""``oracle models``: the configured model, its client and key, the ``[aliases]`` of
``oracle.toml``, and the models litellm knows for each provider that has a key (in the
environment or stored by ``oracle keys``).

Read from litellm's local model list only (its price map from the package): nothing is
fetched and no model is called.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from oracle_core.cli.common import echo_json, json_option

if TYPE_CHECKING:
    from oracle_core.settings import Settings


def _client(model: str, env: Mapping[str, str]) -> str:
    from oracle_core.models.openai import DEMO_MODEL, MODEL_CLIENT, MODEL_CLIENTS, sends_directly
    from oracle_core.settings.reading import env_choice

    if model == DEMO_MODEL:
        return "demo (the offline scripted stand-in)"
    if env_choice(env, MODEL_CLIENT, MODEL_CLIENTS, "auto") == "auto" and sends_directly(model):
        return "direct (HTTP, no litellm)"
    return "litellm"


def _key_source(provider: str, keys: Mapping[str, str], env: Mapping[str, str]) -> str | None:
    """Where a call to ``provider`` gets its key, in the order a model call looks (no value)."""
    from oracle_core.settings.keys import FALLBACK_NAME, provider_variable

    variable = provider_variable(provider)
    if env.get(variable):
        return variable
    if provider in keys:
        return f"stored key {provider!r}"
    return f"stored key {FALLBACK_NAME!r}" if FALLBACK_NAME in keys else None


_TOKEN_FIELDS = ("max_input_tokens", "max_tokens", "input_cost_per_token")


def is_chat_model(entry: Mapping[str, Any]) -> bool:
    """Whether an entry of litellm's model table is a chat model a run can call: its
    ``mode`` is ``chat`` and it has a context window or a price per token. The table also
    files things billed otherwise under ``chat`` (``openai/container``, a code interpreter
    session priced per session, with neither): they are no model to talk to."""
    return entry.get("mode") == "chat" and any(entry.get(f) for f in _TOKEN_FIELDS)


def _chat_models(litellm: Any, provider: str) -> list[str]:
    """litellm's chat models of ``provider`` as model strings (``openai/gpt-4o``)."""
    names = litellm.models_by_provider.get(provider, ())
    chat = [n for n in names if is_chat_model(litellm.model_cost.get(n, {}))]
    return sorted(n if n.startswith(f"{provider}/") else f"{provider}/{n}" for n in chat)


def models_report(settings: Settings) -> dict[str, Any]:
    """What the configured setup offers, as JSON-ready data without any secret."""
    from oracle_core.environment import import_litellm
    from oracle_core.models.openai import DEMO_MODEL
    from oracle_core.settings.keys import FALLBACK_NAME, keys_path, provider_of, read_keys

    env = settings.env
    keys = read_keys(keys_path(settings.home))
    configured: dict[str, Any] | None = None
    aliases = settings.model_aliases()
    if settings.model:
        model = settings.resolve_model(settings.model)
        demo = model == DEMO_MODEL
        provider = None if demo else provider_of(model)
        if demo or provider is None:
            key: str | None = "none needed"
        elif settings.api_key:
            key = "ORACLE_API_KEY or --api-key"
        else:
            key = _key_source(provider, keys, env)
        configured = {
            "model": model,
            "alias": settings.model if model != settings.model else None,
            "client": _client(model, env),
            "provider": provider,
            "key": key,
        }
    litellm = import_litellm()
    providers = []
    for provider in sorted(litellm.models_by_provider):
        # The fallback key alone names no provider: it counts for the configured one only.
        source = _key_source(provider, {k: v for k, v in keys.items() if k != FALLBACK_NAME}, env)
        if source is None and configured and configured["provider"] == provider:
            source = configured["key"]
        models = _chat_models(litellm, provider) if source else []
        if models:
            providers.append({"provider": provider, "key": source, "models": models})
    return {
        "configured": configured,
        "aliases": aliases,
        "providers": providers,
        "keys_path": str(keys_path(settings.home)),
    }


_NO_KEY = (
    "No provider has a key. Add one with `oracle keys set openai` (or `anthropic`, ...: the "
    "part of the model string before '/'), or set the provider's variable (OPENAI_API_KEY)."
)


@click.command("models")
@json_option
def models_command(as_json: bool) -> None:
    """Show the configured model, the model aliases, and the models of each provider that
    has a key.

    Aliases are short names for model strings, set in oracle.toml (`[aliases]` with
    `fast = "openai/gpt-4o-mini"`) and usable wherever a model is named (--model fast).

    A provider has a key when its variable (e.g. OPENAI_API_KEY) is set or a key named
    like it is stored (`oracle keys set openai`). The list is litellm's local one: nothing
    is fetched and no model is called.
    """
    from oracle_core.cli.common import NO_MODEL, load_settings

    report = models_report(load_settings())
    if as_json:
        echo_json(report)
        return
    configured = report["configured"]
    if configured:
        key = configured["key"] or "none"
        alias = f" (alias {configured['alias']})" if configured["alias"] else ""
        click.echo(f"Configured model: {configured['model']}{alias}")
        click.echo(f"  client: {configured['client']}; key: {key}")
    else:
        click.echo(f"Configured model: none ({NO_MODEL})")
    if report["aliases"]:
        click.echo("\nAliases ([aliases] in oracle.toml):")
        click.echo("\n".join(f"  {name}: {model}" for name, model in report["aliases"].items()))
    if not report["providers"]:
        click.echo(f"\n{_NO_KEY}")
    for entry in report["providers"]:
        click.echo(
            f"\n{entry['provider']} (key: {entry['key']}), {len(entry['models'])} chat models:"
        )
        click.echo("\n".join(f"  {model}" for model in entry["models"]))
