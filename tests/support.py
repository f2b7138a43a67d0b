"""Test helpers: real distributions on disk, found through real entry points."""

from __future__ import annotations

import contextlib
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

import pytest

from oracle_core import Middleware, Oracle, PluginManifest, Settings, Tool, hookimpl, tool
from oracle_core.authoring.manifest import Visibility
from oracle_core.plugins.discovery import PluginSource
from oracle_core.plugins.registry import Plugin
from oracle_core.testing.distributions import write_distribution


@dataclass
class SitePackages:
    """A folder on ``sys.path`` into which tests write installed-looking distributions."""

    root: Path
    modules: list[str] = field(default_factory=list)

    def add(
        self,
        dist: str,
        code: str,
        *,
        module: str | None = None,
        entry_point: str | None = None,
        version: str = "1.0.0",
    ) -> Path:
        """Write ``module.py`` holding ``code`` and a ``.dist-info`` whose entry point loads it.

        The result is what ``pip install`` leaves behind: importlib.metadata finds it like
        any installed distribution.
        """
        module = module or dist.replace("-", "_")
        info = write_distribution(
            self.root, dist, code, module=module, entry_point=entry_point, version=version
        )
        self.modules.append(module)
        return info

    def settings(self, **overrides: object) -> Settings:
        """Settings that look only at this folder's plugins, with a private ORACLE_HOME."""
        env = {"ORACLE_HOME": str(self.root / "home")}
        env.update({k: str(v) for k, v in overrides.items()})
        return Settings.from_env(env)

    def oracle(self, **env: object) -> Oracle:
        """An oracle built from exactly the distributions in this folder."""
        return Oracle(settings=self.settings(**env), path=[str(self.root)])


def plugin_code(
    name: str,
    *,
    visibility: str = "on-demand",
    tools: tuple[str, ...] | None = None,
    extra_manifest: str = "",
) -> str:
    """Source of a small valid plugin module with one ``str -> str`` tool per name.

    By default the plugin has one tool, ``<name>_ping``, so plugins never clash by accident.
    """
    tools = tools or (f"{name.replace('-', '_')}_ping",)
    tool_defs = "\n".join(
        f'''
@tool
def {t}(text: str) -> str:
    """Echo the text back ({t})."""
    return "{t}:" + text
'''
        for t in tools
    )
    return f"""
from oracle_core import hookimpl, PluginManifest, tool
{tool_defs}

@hookimpl
def oracle_manifest():
    return PluginManifest(
        name={name!r},
        summary="The {name} plugin.",
        when_to_use=["the user asks about {name}"],
        visibility={visibility!r},
        {extra_manifest}
    )

@hookimpl
def oracle_tools():
    return [{", ".join(tools)}]
"""


class CodePlugin:
    """A plugin given in code: an object whose methods are the hook implementations.

    ``calls`` records every call of its tools as ``(tool name, arguments)``, so a test can
    prove a refused tool's function was never entered.
    """

    def __init__(
        self,
        name: str,
        *,
        visibility: str = "on-demand",
        tools: tuple[str, ...] | None = None,
        tool_visibility: dict[str, str] | None = None,
        **manifest: object,
    ) -> None:
        from oracle_core import tool as make_tool

        self.name = name
        self.calls: list[tuple[str, dict[str, object]]] = []
        self.manifest_fields: dict[str, object] = {
            "name": name,
            "summary": f"The {name} plugin.",
            "when_to_use": [f"the user asks about {name}"],
            "visibility": visibility,
            **manifest,
        }
        overrides = tool_visibility or {}
        self.tools = []
        for tool_name in tools or (f"{name}_tool",):

            def run(text: str = "", _name: str = tool_name) -> str:
                self.calls.append((_name, {"text": text}))
                return f"{_name} says {text}"

            run.__doc__ = f"The {tool_name} tool of {name}."
            self.tools.append(
                make_tool(name=tool_name, visibility=overrides.get(tool_name))(  # type: ignore[arg-type]
                    _without_private(run)
                )
            )

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest.model_validate(self.manifest_fields)

    @hookimpl
    def oracle_tools(self) -> list[Tool]:
        return list(self.tools)


def _without_private(fn: Callable[..., str]) -> Callable[..., str]:
    """Hide the ``_name`` default from the tool schema by wrapping ``fn``."""

    def wrapper(text: str = "") -> str:
        return fn(text)

    wrapper.__doc__ = fn.__doc__
    return wrapper


def fresh_python(code: str) -> str:
    """What ``code`` prints when run by a new interpreter (nothing imported by this one)."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout


class ToolsPlugin:
    """An always-on plugin whose tools are given by the test."""

    def __init__(
        self, *tools: Any, middleware: list[Middleware] | None = None, name: str = "kit"
    ) -> None:
        self.name = name
        self.tools = list(tools)
        self.middleware = middleware or []

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(
            name=self.name, summary="Test tools.", when_to_use=["tests"], visibility="always"
        )

    @hookimpl
    def oracle_tools(self) -> list[Any]:
        return self.tools

    @hookimpl
    def oracle_middleware(self) -> list[Middleware]:
        return self.middleware


def wait_until(condition: Callable[[], bool], what: str, *, wait: float) -> None:
    """Poll ``condition`` until it holds; fail the test after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {wait:g} s waiting until {what}")
        time.sleep(0.01)


Spawn = Callable[..., subprocess.Popen[str]]
"""Starts the child script with arguments; its output (stdout and stderr) is piped."""


@contextlib.contextmanager
def spawning(script: Path, *, wait: float, cwd: Path | None = None) -> Iterator[Spawn]:
    """Start ``python script <args>`` children; every one still running is killed at the end.

    Args:
        script: the child script.
        wait: seconds to wait for a killed child's output at the end.
        cwd: the children's working folder (default: this process's).
    """
    children: list[subprocess.Popen[str]] = []

    def start(*args: str | Path) -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, str(script), *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=cwd,
        )
        children.append(child)
        return child

    try:
        yield start
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
            child.communicate(timeout=wait)


def make_plugin(name: str, *tools: Tool, visibility: Visibility = "on-demand") -> Plugin:
    """An assembled plugin of ``tools``, as the loader would make it, without entry points."""
    manifest = PluginManifest(
        name=name, summary=f"The {name} plugin.", when_to_use=["w"], visibility=visibility
    )
    return Plugin(manifest, PluginSource(name=name), list(tools))


def reference_text(text: str) -> str:
    """What cleaning text must give, worked out one code unit at a time (independent of
    the code under test): pairs of code units joined, every lone one U+FFFD."""
    out, i = [], 0
    while i < len(text):
        unit = ord(text[i])
        low = ord(text[i + 1]) if i + 1 < len(text) else 0
        if 0xD800 <= unit <= 0xDBFF and 0xDC00 <= low <= 0xDFFF:
            out.append(chr(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)))
            i += 2
        else:
            out.append("\ufffd" if 0xD800 <= unit <= 0xDFFF else text[i])
            i += 1
    return "".join(out)


@contextlib.contextmanager
def serve_app(app: Any, **options: Any) -> Iterator[str]:
    """``oracle serve``'s uvicorn server for ``app``, in a thread on 127.0.0.1; ``options``
    go to ``make_server`` (``proxy=Proxy(...)``, ...).

    Yields the base URL (``http://127.0.0.1:PORT``) once it takes connections; the server
    stops at the end, as on SIGTERM.
    """
    import socket
    import threading

    from oracle_core.server.serving import make_server

    started = threading.Event()
    options.setdefault("log_level", "warning")
    server = make_server(app, None, on_serving=started.set, **options)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert started.wait(30), "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(60)


@tool(approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


class Careful:
    """An always plugin whose one tool (``delete_file``) needs a person's approval."""

    @hookimpl
    def oracle_manifest(self) -> PluginManifest:
        return PluginManifest(
            name="files", summary="Files.", when_to_use=["files"], visibility="always"
        )

    @hookimpl
    def oracle_tools(self) -> list[Any]:
        return [delete_file]


def start_serve(
    name: str,
    env: Mapping[str, str],
    *,
    wait: float,
    args: Sequence[str] = ("--log-level", "warning"),
    **popen: Any,
) -> tuple[subprocess.Popen[str], str, list[str]]:
    """Start ``oracle serve --port 0 <args>`` with ``env``; wait (up to ``wait`` seconds) for
    its "serving" line. Returns the process, its URL and its output so far (kept growing by
    a thread: read it to see what the process printed). ``popen`` goes to ``Popen``."""
    command = [sys.executable, "-m", "oracle_core", "serve", "--port", "0", *args]
    process = subprocess.Popen(
        command, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        **popen,
    )  # fmt: skip
    assert process.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    output: list[str] = []

    def pump(stream: IO[str]) -> None:
        for line in stream:
            output.append(line)
            lines.put(line)

    threading.Thread(target=pump, args=(process.stdout,), daemon=True).start()
    deadline = time.monotonic() + wait
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            process.kill()
            pytest.fail(f"oracle serve {name} did not start: {''.join(output)}")
        if line.startswith("oracle: serving"):
            return process, line.split(" on ", 1)[1].split(" ", 1)[0], output


def follow_thread(
    url: str, thread: str, *, wait: float
) -> tuple[threading.Thread, list[tuple[str, dict[str, Any]]]]:
    """Follow ``thread``'s events on the server at ``url`` until its ``done``, in a thread;
    returns once the server said it subscribed. The list fills with ``(event, data)``."""
    import json

    import httpx

    events: list[tuple[str, dict[str, Any]]] = []
    subscribed = threading.Event()

    def follow() -> None:
        address = f"{url}/threads/{thread}/events?until=done"
        with httpx.stream("GET", address, timeout=wait) as response:
            kind = ""
            for line in response.iter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    events.append((kind, json.loads(line[6:])))
                    if kind == "subscribed":
                        subscribed.set()

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    assert subscribed.wait(wait), "the follower never subscribed"
    return follower, events


class LoopbackServer:
    """An HTTP server on 127.0.0.1, serving in a thread of its own from :meth:`start`;
    a subclass gives the request handler class (:meth:`handler`)."""

    def start(self) -> None:
        """Listen on a free port and serve until :meth:`close`."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """The class that answers each request."""
        raise NotImplementedError

    @property
    def url(self) -> str:
        """The ``/v1`` base URL of the server."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
