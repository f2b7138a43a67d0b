"""Helpers shared by the CLI commands."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import click
from click.shell_completion import CompletionItem

from oracle_core.cli.checks import NO_MODEL as NO_MODEL
from oracle_core.cli.checks import load_settings as load_settings
from oracle_core.errors import InvalidThreadIdError
from oracle_core.values.ids import check_thread_id

_F = TypeVar("_F", bound=Callable[..., Any])

if TYPE_CHECKING:
    from oracle_core.capabilities.surface import Surface
    from oracle_core.oracle import Oracle
    from oracle_core.settings import Settings
    from oracle_core.values.run_options import RunOptions


model_option = click.option(
    "-m",
    "--model",
    envvar="ORACLE_MODEL",
    help="A litellm model string, or demo for the offline stand-in [env: ORACLE_MODEL].",
)
api_base_option = click.option(
    "--api-base",
    envvar="ORACLE_API_BASE",
    help="The model server's base URL [env: ORACLE_API_BASE].",
)
api_key_option = click.option(
    "--api-key",
    envvar="ORACLE_API_KEY",
    show_envvar=False,
    help="The model server's API key [env: ORACLE_API_KEY; default: the provider's own "
    "variable, e.g. OPENAI_API_KEY].",
)


def model_call_options(command: _F) -> _F:
    """``--max-tokens``, ``--timeout`` and ``--retries``: this run's model-call settings,
    which win over ``[models."<model>"]`` of ``oracle.toml`` and the environment
    (docs/models.md); read them with :func:`run_options`."""
    command = click.option(
        "--retries",
        type=click.IntRange(min=0),
        metavar="N",
        help="Retries of a model call that failed in a way that may pass (a timeout, 429, "
        '5xx) [default: [models."<model>"] retries, ORACLE_MODEL_RETRIES, else 2].',
    )(command)
    command = click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        metavar="SECONDS",
        help="Seconds one attempt of a model call may take [default: "
        '[models."<model>"] timeout, ORACLE_MODEL_TIMEOUT, else 120].',
    )(command)
    return click.option(
        "--max-tokens",
        type=click.IntRange(min=1),
        metavar="N",
        help='The most tokens one model reply may have [default: [models."<model>"] '
        "max_tokens, ORACLE_MAX_TOKENS, else 4096].",
    )(command)


def run_options(
    max_tokens: int | None,
    timeout: float | None,
    retries: int | None,
    extra: Mapping[str, Any] | None = None,
) -> RunOptions:
    """The run's options for :func:`model_call_options` (only those given go into its
    ``model_options``), over ``extra`` (the ``-o`` options)."""
    from oracle_core.values.run_options import RunOptions

    options = {"max_tokens": max_tokens, "timeout": timeout, "num_retries": retries}
    given = {name: value for name, value in options.items() if value is not None}
    return RunOptions(model_options={**(extra or {}), **given})


key_option = click.option(
    "--key",
    "key_name",
    metavar="NAME",
    help="Use the API key stored as NAME (`oracle keys set NAME`) instead of --api-key.",
)


def stored_key(name: str, api_key: str | None) -> str:
    """The value of the key stored as ``name`` (``--key NAME``), read from ``keys.json``.

    Raises:
        click.UsageError: ``--api-key`` given too, or no key of that name is stored
            (saying how to list and store keys).
    """
    from oracle_core.settings.keys import keys_path, read_keys

    if (
        api_key is not None
        and click.get_current_context().get_parameter_source("api_key")
        is click.core.ParameterSource.COMMANDLINE
    ):
        raise click.UsageError("give --key NAME or --api-key KEY, not both")
    keys = read_keys(keys_path(load_settings().home))
    if name not in keys:
        stored = ", ".join(sorted(keys)) or "none"
        raise click.UsageError(
            f"no key named {name!r} is stored (stored: {stored}); store it with "
            f"`oracle keys set {name}`"
        )
    return keys[name]


def _thread_id(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return check_thread_id(value)
    except InvalidThreadIdError as error:
        raise click.BadParameter(str(error)) from None


def _complete_thread(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Shell completion of a thread id: the stored ones (none if the store cannot be read)."""
    from oracle_core.cli.store_access import thread_ids

    try:
        return [CompletionItem(t) for t in thread_ids(incomplete)]
    except Exception:  # completion must never print a traceback into the shell
        return []


def thread_option_of(
    default: str | None, help: str, metavar: str | None = None
) -> Callable[[_F], _F]:
    """A ``--thread`` option: the id checked by the one rule, completed from the store."""
    return click.option(
        "--thread",
        default=default,
        show_default=default is not None,
        callback=_thread_id,
        shell_complete=_complete_thread,
        help=help,
        metavar=metavar,
    )


thread_option = thread_option_of("default", "The conversation thread.")
thread_argument = click.argument(
    "thread_id", metavar="ID", callback=_thread_id, shell_complete=_complete_thread
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")


def redact_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def echo_json(data: Any) -> None:
    """Print ``data`` as indented JSON, non-ASCII text as is (what ``--json`` prints)."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def build_oracle(
    *,
    require_model: bool = False,
    surface: Surface | None = None,
    instructions: str | None = None,
    settings: Settings | None = None,
    **overrides: Any,
) -> Oracle:
    """Build the oracle from ``settings``, else from the environment (``overrides`` win).

    A strict-mode plugin failure becomes exit code 1 with the reason on stderr. A
    ``[surface]`` that cannot be honoured, and with ``require_model`` no model configured,
    are configuration errors: one line saying how to fix it, exit code 2 (the offline
    stand-in only on ``--model demo``). ``surface`` overrides ``[surface]`` of
    ``oracle.toml`` (``oracle plugins`` lists the plugins whatever it says);
    ``instructions`` open the system prompt instead of the oracle's own (``-s``).
    """
    from oracle_core.cli.checks import require_model as needs_model
    from oracle_core.errors import StrictPluginError
    from oracle_core.oracle import Oracle

    resolved = settings or load_settings(**overrides)
    if require_model:
        needs_model(resolved)
    try:
        if instructions is None:
            return Oracle(settings=resolved, surface=surface)
        return Oracle(settings=resolved, surface=surface, instructions=instructions)
    except StrictPluginError as error:
        click.echo(f"oracle: {error}", err=True)
        sys.exit(1)


def talking_oracle(
    *,
    model: str | None,
    api_base: str | None,
    api_key: str | None,
    key_name: str | None,
    system: str | None,
) -> Oracle:
    """The oracle ``ask`` and ``chat`` talk to: a model required (see :func:`build_oracle`),
    the key stored as ``key_name`` (``--key``), ``system`` opening the system prompt (``-s``)."""
    if key_name is not None:
        api_key = stored_key(key_name, api_key)
    return build_oracle(
        require_model=True, instructions=system, model=model, api_base=api_base, api_key=api_key
    )


def table(rows: list[list[str]], headers: list[str]) -> str:
    """Format ``rows`` as a left-aligned text table under ``headers``."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += [
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    return "\n".join(lines)


def iso_time(seconds: float | None) -> str:
    """A time (Unix seconds) as ISO 8601 in local time with its offset
    (``2026-12-01T22:03:04+01:00``); ``-`` for none."""
    if not seconds or seconds <= 0:
        return "-"
    return datetime.fromtimestamp(seconds).astimezone().isoformat(timespec="seconds")
