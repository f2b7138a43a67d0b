"""``oracle serve``: the oracle as an HTTP service (JSON and SSE API, OpenAI-compatible
endpoint, plugin routes, chat page). Needs ``pip install 'oracle-core-runtime[server]'``."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from typing import Literal

import click

from oracle_core.cli.checks import check_serving
from oracle_core.cli.common import api_base_option, build_oracle, load_settings, model_option
from oracle_core.cli.extras import extra_for, missing_extra_message

_LIMIT_DEFAULTS = {
    "max_body_bytes": 1_048_576,
    "max_message_chars": 32_000,
    "max_history_messages": 200,
}
_TIME_DEFAULTS = {"header_timeout": 10.0, "body_timeout": 30.0, "shutdown_grace": 30.0}


def _bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(address)
    return sock


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to bind.")
@click.option(
    "--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
    help="The port to bind; 0 picks a free one (printed on start).",
)  # fmt: skip
@model_option
@api_base_option
@click.option(
    "--max-body-bytes", envvar="ORACLE_MAX_BODY_BYTES", type=click.IntRange(min=1),
    default=_LIMIT_DEFAULTS["max_body_bytes"], show_default=True,
    help="Largest request body [env: ORACLE_MAX_BODY_BYTES].",
)  # fmt: skip
@click.option(
    "--max-message-chars", envvar="ORACLE_MAX_MESSAGE_CHARS", type=click.IntRange(min=1),
    default=_LIMIT_DEFAULTS["max_message_chars"], show_default=True,
    help="Longest user message [env: ORACLE_MAX_MESSAGE_CHARS].",
)  # fmt: skip
@click.option(
    "--max-history-messages", envvar="ORACLE_MAX_HISTORY_MESSAGES", type=click.IntRange(min=1),
    default=_LIMIT_DEFAULTS["max_history_messages"], show_default=True,
    help="Most earlier messages a stateless OpenAI-compatible request may carry "
    "[env: ORACLE_MAX_HISTORY_MESSAGES].",
)  # fmt: skip
@click.option(
    "--allowed-hosts", envvar="ORACLE_ALLOWED_HOSTS", default="", metavar="NAMES",
    help="With a token: the Host names to answer to, comma-separated (*.example.com for "
    "subdomains); default any. Without a token only loopback names are answered "
    "[env: ORACLE_ALLOWED_HOSTS].",
)  # fmt: skip
@click.option(
    "--header-timeout", envvar="ORACLE_HEADER_TIMEOUT", type=click.FloatRange(min=0, min_open=True),
    default=_TIME_DEFAULTS["header_timeout"], show_default=True,
    help="Seconds a request's line and headers may take to arrive [env: ORACLE_HEADER_TIMEOUT].",
)  # fmt: skip
@click.option(
    "--body-timeout", envvar="ORACLE_BODY_TIMEOUT", type=click.FloatRange(min=0, min_open=True),
    default=_TIME_DEFAULTS["body_timeout"], show_default=True,
    help="Seconds a request body may take to arrive [env: ORACLE_BODY_TIMEOUT].",
)  # fmt: skip
@click.option(
    "--shutdown-grace", envvar="ORACLE_SHUTDOWN_GRACE", type=click.FloatRange(min=0, min_open=True),
    default=_TIME_DEFAULTS["shutdown_grace"], show_default=True,
    help="Seconds requests and runs in progress get after SIGTERM; the process is gone "
    "within it [env: ORACLE_SHUTDOWN_GRACE].",
)  # fmt: skip
@click.option(
    "--log-level", default="info", show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    help="Server log level (logs go to stderr).",
)  # fmt: skip
@click.option(
    "--log-format", envvar="ORACLE_LOG_FORMAT", default="text", show_default=True,
    type=click.Choice(["text", "json"], case_sensitive=False),
    help="Log lines as text or one JSON object a line [env: ORACLE_LOG_FORMAT].",
)  # fmt: skip
@click.option(
    "--root-path", envvar="ORACLE_ROOT_PATH", default="", metavar="PATH",
    help="The path prefix a reverse proxy serves the oracle under and strips (/oracle); "
    "links start with it [env: ORACLE_ROOT_PATH].",
)  # fmt: skip
@click.option(
    "--proxy-headers/--no-proxy-headers", envvar="ORACLE_PROXY_HEADERS", default=True,
    show_default=True,
    help="Take the client's address and scheme from X-Forwarded-For and X-Forwarded-Proto "
    "when the connection comes from --forwarded-allow-ips [env: ORACLE_PROXY_HEADERS].",
)  # fmt: skip
@click.option(
    "--forwarded-allow-ips", envvar="ORACLE_FORWARDED_ALLOW_IPS", default=None, metavar="IPS",
    help="Addresses (comma-separated IPs or networks, * for any) whose proxy headers are "
    "trusted; default $FORWARDED_ALLOW_IPS or 127.0.0.1,::1 [env: ORACLE_FORWARDED_ALLOW_IPS].",
)  # fmt: skip
def serve_command(
    host: str,
    port: int,
    model: str | None,
    api_base: str | None,
    max_body_bytes: int,
    max_message_chars: int,
    max_history_messages: int,
    allowed_hosts: str,
    header_timeout: float,
    body_timeout: float,
    shutdown_grace: float,
    log_level: str,
    log_format: Literal["text", "json"],
    root_path: str,
    proxy_headers: bool,
    forwarded_allow_ips: str | None,
) -> None:
    """Serve the oracle over HTTP: API, OpenAI-compatible endpoint and a chat page at /.

    It refuses to start without a model (set ORACLE_MODEL or pass --model; --model demo
    serves the offline stand-in) or on a store that does not answer.

    Requests need `Authorization: Bearer <token>` when ORACLE_API_TOKEN is set (several
    tokens may be given, comma-separated). Without a token the server binds to a loopback
    address only and answers only to loopback Host names (localhost, 127.0.0.1, [::1]).
    """
    from oracle_core.server.auth import TOKEN_ENV, parse_tokens
    from oracle_core.values.loopback import is_loopback_host

    tokens = parse_tokens(os.environ.get(TOKEN_ENV))
    if not tokens and not is_loopback_host(host):
        click.echo(
            f"oracle: refusing to serve on {host} without an API token: anyone who can reach "
            f"that address could use the oracle and its tools. Set {TOKEN_ENV} (several tokens "
            "may be comma-separated), or bind to 127.0.0.1.",
            err=True,
        )
        sys.exit(2)
    try:
        from oracle_core.server import Limits, create_app
        from oracle_core.server.serving import Proxy, ServerTimeouts, make_server
    except ImportError as error:
        if extra_for(error) is None:
            raise
        click.echo(f"oracle: {missing_extra_message(error, 'serve')}", err=True)
        sys.exit(1)
    from oracle_core.server.hosts import HostPolicy

    try:  # before the oracle is built: a wrong value should not wait for every plugin
        HostPolicy.for_server(token=bool(tokens), allowed_hosts=allowed_hosts)
        proxy = Proxy(root_path, proxy_headers, forwarded_allow_ips)
    except ValueError as error:
        click.echo(f"oracle: {error}", err=True)
        sys.exit(2)
    settings = load_settings(model=model, api_base=api_base)
    check_serving(settings)  # a model, and a store that answers: before any plugin loads
    oracle = build_oracle(settings=settings)
    limits = Limits(
        max_body_bytes=max_body_bytes,
        max_message_chars=max_message_chars,
        max_history_messages=max_history_messages,
        body_timeout_seconds=body_timeout,
    )
    app = create_app(oracle, tokens=tokens, limits=limits, allowed_hosts=allowed_hosts)
    for failure in oracle.registry.failures:
        click.echo(f"oracle: plugin {failure.plugin} left out: {failure}", err=True)
    for failure in app.state.server.route_failures:
        click.echo(
            f"oracle: the routes of plugin {failure.plugin} are not served: {failure}", err=True
        )
    try:
        sock = _bind(host, port)
    except OSError as error:
        click.echo(f"oracle: cannot bind {host}:{port}: {error.strerror or error}", err=True)
        sys.exit(1)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    behind = f", behind a proxy at {proxy.root_path}/" if proxy.root_path else ""
    banner = (
        f"oracle: serving {len(oracle.registry)} plugin(s) on http://{shown}:{bound_port} "
        f"(chat page /, API docs /docs, auth {'on' if tokens else 'off'}{behind})"
    )
    timeouts = ServerTimeouts(header_seconds=header_timeout, shutdown_grace_seconds=shutdown_grace)
    server = make_server(
        app, timeouts, log_level=log_level, log_format=log_format, proxy=proxy,
        on_serving=lambda: click.echo(banner),
    )  # fmt: skip
    # uvicorn stops gracefully on Ctrl-C, then raises it again for its caller; stopping was
    # what was asked, so the command ends as uvicorn's own does: exit 0, no "Aborted!".
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[sock])
