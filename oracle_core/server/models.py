"""The JSON the HTTP API answers with, as pydantic models (they also make the OpenAPI docs).

What clients send is in :mod:`oracle_core.server.bodies`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class UsageBody(BaseModel):
    """Provider-reported tokens."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class RunBody(BaseModel):
    """A finished run."""

    run_id: str
    thread_id: str
    status: str = Field(description="completed, failed or cancelled")
    answer: str
    usage: UsageBody
    error: str | None
    loaded: list[str] = Field(description="Plugins this run loaded into the thread.")
    output: Any = Field(
        None, description="The parsed JSON answer of a completed run given `output_schema`."
    )
    events: list[dict[str, Any]] = Field(description="Every event of the run, as in the stream.")


class ThreadCreated(BaseModel):
    """A new, empty thread."""

    thread_id: str


class ThreadSummaryBody(BaseModel):
    """One thread of a listing: how recent and how large it is."""

    id: str
    created_at: float = Field(description="When it was first saved (Unix seconds).")
    updated_at: float = Field(description="When it was last saved (Unix seconds).")
    messages: int
    tokens: int = Field(description="The size of its messages in tokens.")
    runs: int
    title: str = Field(
        default="",
        description="The first words of its first user message (at most 60 characters); "
        "empty when it has none.",
    )


class ThreadList(BaseModel):
    """Stored threads, most recently updated first."""

    threads: list[str] = Field(description="Their ids (as before ``summaries`` was added).")
    summaries: list[ThreadSummaryBody] = Field(
        description="The same threads in the same order, each with its size and times."
    )


class RunRecordBody(BaseModel):
    """One run of a thread, as saved."""

    id: str
    thread_id: str
    status: str
    steps: int
    usage: UsageBody
    error: str | None
    created_at: float
    updated_at: float
    resumed: int = Field(
        0, description="Times it was resumed after its process ended mid-run (docs/scale-out.md)."
    )
    resumed_at: float | None = Field(None, description="When it was last resumed so.")


class ThreadBody(BaseModel):
    """A thread: its messages (OpenAI format), loaded plugins, runs and token use."""

    thread_id: str
    messages: list[dict[str, Any]]
    loaded_plugins: list[str]
    runs: list[RunRecordBody] = Field(description="Oldest first; run i answers user message i.")
    usage: UsageBody
    active_run: str | None = Field(
        description='The run in progress ("" while it starts), or null when the thread is idle.'
    )


class Capability(BaseModel):
    """A plugin the model may discover, as ``list_capabilities`` shows it."""

    name: str
    summary: str
    visibility: str
    loaded: bool
    category: str | None = None
    tags: list[str] = []


class ToolInfo(BaseModel):
    """A tool of an installed plugin."""

    name: str
    description: str
    visibility: str


class RouteInfo(BaseModel):
    """An HTTP route of an installed plugin."""

    path: str
    methods: list[str]
    public: bool


class MCPServerState(BaseModel):
    """An MCP server's state, as ``oracle plugins`` shows it (never its secrets)."""

    state: str = Field(description="idle, starting, running, crashed, failed or stopped.")
    transport: str
    tools: int
    starts: int
    restarts: int
    error: str | None
    problems: list[str] = Field(description="Its tools that were left out, and why.")


class PluginInfo(BaseModel):
    """An installed plugin (``mcp``: the state of an imported MCP server, else ``None``)."""

    name: str
    title: str | None
    summary: str
    visibility: str
    version: str | None
    category: str | None
    tags: list[str]
    tools: list[ToolInfo]
    routes: list[RouteInfo]
    mcp: MCPServerState | None = None


class PluginFailure(BaseModel):
    """A plugin that could not be assembled, and why."""

    plugin: str
    distribution: str | None
    error: str


class Installed(BaseModel):
    """What is installed: the oracle's plugins and the ones left out."""

    model: str
    plugins: list[PluginInfo]
    failures: list[PluginFailure]


class Health(BaseModel):
    """The server is up."""

    status: str
    version: str
    auth: bool = Field(description="Whether API requests need a bearer token.")


class Ready(BaseModel):
    """Whether the server can serve runs now: its store answers."""

    status: str = Field(description='"ready", or "unavailable" (with status 503).')
    store: str = Field(description='"ok", or what is wrong with the store (without its address).')


class ErrorDetail(BaseModel):
    """What went wrong."""

    type: str
    message: str


class ErrorBody(BaseModel):
    """Every error response."""

    error: ErrorDetail


UNAUTHORIZED: dict[str, Any] = {
    "model": ErrorBody,
    "description": "Missing or invalid bearer token.",
}
"""The ``401`` response of every route that needs the token, for the OpenAPI document."""
