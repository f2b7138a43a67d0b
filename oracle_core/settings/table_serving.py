"""The rows of the settings table (:mod:`oracle_core.settings.table`) read outside the
settings: by plugins' configuration, ``oracle serve``, telemetry, the credential vault and
the test harness. Each is read where it is used; it is listed so that it is a known name
(:mod:`oracle_core.settings.variables`) and documented."""

from __future__ import annotations

from oracle_core.settings.setting import Setting

_SERVER = "server.md"

SERVING_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "plugin_setting",
        "overrides `[plugins.<name>] <key>` in `oracle.toml`",
        "ORACLE_PLUGIN_<NAME>__<KEY>",
        "plugins.<name>.<key>",
        owner="plugins",
    ),
    Setting(
        "api_token",
        "bearer token(s) for `oracle serve`, comma-separated",
        "ORACLE_API_TOKEN",
        kind="secret",
        owner="serve",
    ),
    Setting(
        "log_format",
        "`oracle serve`'s log lines: `text` or `json` (one object a line); each has its "
        "time, level, logger and the request and run it was written for "
        "([server.md](server.md#logs))",
        "ORACLE_LOG_FORMAT",
        kind="choice",
        default="text",
        owner="serve",
        choices=("text", "json"),
    ),
    Setting(
        "root_path",
        "the path prefix a reverse proxy serves `oracle serve` under and strips (`/oracle`) "
        "([server.md](server.md#behind-a-reverse-proxy))",
        "ORACLE_ROOT_PATH",
        owner="serve",
    ),
    Setting(
        "proxy_headers",
        "whether `oracle serve` takes `X-Forwarded-For` / `X-Forwarded-Proto`, from the "
        "proxies of `ORACLE_FORWARDED_ALLOW_IPS`",
        "ORACLE_PROXY_HEADERS",
        kind="flag",
        default=True,
        owner="serve",
    ),
    Setting(
        "forwarded_allow_ips",
        "the proxies whose `X-Forwarded-For` / `X-Forwarded-Proto` `oracle serve` takes "
        "(uvicorn's `FORWARDED_ALLOW_IPS` is read too)",
        "ORACLE_FORWARDED_ALLOW_IPS",
        kind="names",
        default=("127.0.0.1", "::1"),
        shown_default="`127.0.0.1,::1`",
        owner="serve",
    ),
    Setting(
        "traces_exporter",
        "`otlp`, `console` (on stderr) or `none`, comma-separated, as the OpenTelemetry SDK "
        "reads them; an unreachable collector adds at most 0.75 s to a command's exit "
        "([observability.md](observability.md#turning-traces-on))",
        "OTEL_TRACES_EXPORTER",
        kind="names",
        shown_default="unset: `otlp` when an OTLP endpoint is set",
        owner="telemetry",
    ),
    Setting(
        "metrics_exporter",
        "the same for metrics: `otlp`, `console` (on stderr) or `none`, comma-separated "
        "([observability.md](observability.md#turning-traces-on))",
        "OTEL_METRICS_EXPORTER",
        kind="names",
        shown_default="unset: `otlp` when an OTLP endpoint is set",
        owner="telemetry",
    ),
    Setting(
        "secret_key",
        "the Fernet key credentials (API keys, OAuth tokens of [connections](connections.md)) "
        "are encrypted with; make one with `oracle connections keygen`. `NEW,OLD` during a "
        "rotation: the first seals, every one opens (`oracle connections rotate` re-seals). "
        "Every process sharing a store needs it; losing it loses the credentials",
        "ORACLE_SECRET_KEY",
        kind="secret",
        shown_default="unset: credentials cannot be set",
        owner="credentials",
    ),
    # Listed in docs/server.md's table of `oracle serve` options and in docs/testing.md.
    Setting(
        "max_body_bytes",
        "largest request body",
        "ORACLE_MAX_BODY_BYTES",
        kind="int",
        default=1048576,
        owner="serve",
        unit="bytes",
        minimum=1,
        page=_SERVER,
    ),
    Setting(
        "max_message_chars",
        "longest user message",
        "ORACLE_MAX_MESSAGE_CHARS",
        kind="int",
        default=32000,
        owner="serve",
        unit="characters",
        minimum=1,
        page=_SERVER,
    ),
    Setting(
        "max_history_messages",
        "most earlier messages a stateless OpenAI-compatible request may carry",
        "ORACLE_MAX_HISTORY_MESSAGES",
        kind="int",
        default=200,
        owner="serve",
        unit="messages",
        minimum=1,
        page=_SERVER,
    ),
    Setting(
        "allowed_hosts",
        "`Host` names to answer to, comma-separated; needs a token",
        "ORACLE_ALLOWED_HOSTS",
        kind="names",
        shown_default="any (with a token)",
        owner="serve",
        page=_SERVER,
    ),
    Setting(
        "header_timeout",
        "seconds a request's line and headers may take to arrive",
        "ORACLE_HEADER_TIMEOUT",
        kind="float",
        default=10.0,
        owner="serve",
        unit="seconds",
        positive=True,
        page=_SERVER,
    ),
    Setting(
        "body_timeout",
        "seconds a request body may take to arrive",
        "ORACLE_BODY_TIMEOUT",
        kind="float",
        default=30.0,
        owner="serve",
        unit="seconds",
        positive=True,
        page=_SERVER,
    ),
    Setting(
        "shutdown_grace",
        "seconds requests and runs in progress get after SIGTERM",
        "ORACLE_SHUTDOWN_GRACE",
        kind="float",
        default=30.0,
        owner="serve",
        unit="seconds",
        positive=True,
        page=_SERVER,
    ),
    Setting(
        "allow_model_requests",
        "`1`: the test harness lets a run call a real model",
        "ORACLE_ALLOW_MODEL_REQUESTS",
        kind="flag",
        default=False,
        owner="testing",
        page="testing.md",
    ),
)
"""Settings read outside :class:`~oracle_core.settings.Settings`: those docs/operators.md
lists, in its order, then those of docs/server.md and docs/testing.md."""
