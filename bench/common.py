"""What the benchmarks share: text tables, quantiles, child processes, the fake model server.

A bench script imports it as ``from common import ...`` (a script's own folder is on
``sys.path``). Helpers a test needs as well live in :mod:`oracle_core.testing` and are
imported from there (the fake OpenAI server, installed-looking distributions).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence


def table(rows: Sequence[Sequence[str]], *, numbers_right: bool = True, rule: bool = True) -> str:
    """``rows`` (the first one the headers) as aligned text columns.

    Args:
        rows: the header row, then one row of cells per line.
        numbers_right: right-justify every column but the first (the names).
        rule: put a line of dashes under the headers.
    """
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            c.rjust(w) if i and numbers_right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    if rule:
        lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def quantile(samples: Sequence[float], share: float) -> float:
    """The sample below which ``share`` of ``samples`` lie (nearest rank; 0.99 is p99)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def serve_fake_model(content: str, usage: tuple[int, int]) -> None:
    """Serve a fake OpenAI model answering ``content`` until stdin closes; print its URL first.

    Run in a child process (see :func:`start`), so the model's work is not counted in the
    CPU time of the process measured.
    """
    from oracle_core.testing.openai_server import FakeOpenAI, Reply

    with FakeOpenAI() as fake:
        fake.respond_with(lambda request: Reply(content=content, usage=usage))
        print(fake.url, flush=True)
        sys.stdin.read()


def launch(args: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """Start a process with piped stdin and stdout; wait for its first line, return both.

    Raises:
        SystemExit: the process ended before printing a line.
    """
    process = subprocess.Popen(
        args, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.kill()
        raise SystemExit(f"{' '.join(args)} did not start")
    return process, line


def start(args: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """Start a process whose first line holds its URL; return it and the URL.

    The rest of its output is read in a thread, so it never stalls on a full pipe.

    Raises:
        SystemExit: the process did not start, or its first line holds no URL.
    """
    process, line = launch(args, env)
    assert process.stdout is not None
    threading.Thread(target=process.stdout.read, daemon=True).start()
    url = next((word for word in line.split() if word.startswith("http://")), None)
    if url is None:
        stop(process)
        raise SystemExit(f"{' '.join(args)} printed no URL: {line.strip()!r}")
    return process, url


def stop(process: subprocess.Popen[str]) -> None:
    """Stop a process started by :func:`start`: close its stdin, terminate it, wait."""
    assert process.stdin is not None
    process.stdin.close()
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds the process has used so far (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


ORACLE_SERVE = [
    sys.executable,
    "-m",
    "oracle_core",
    "serve",
    "--port",
    "0",
    "--log-level",
    "warning",
]
"""``oracle serve`` on a free port, logging warnings only; add options after it."""


class Child:
    """A process started by :func:`start`, stopped when the ``with`` block ends.

    Args:
        args: the command line.
        env: its environment (default: this process's).
    """

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        self.process, self.url = start(args, env)

    def close(self) -> None:
        """Stop the process."""
        stop(self.process)

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_env(api_base: str, **extra: str) -> dict[str, str]:
    """The environment of an ``oracle serve`` child: no plugins, no token, the fake model at
    ``api_base``; ``extra`` adds to it (``ORACLE_HOME=...``)."""
    return {
        **os.environ,
        "ORACLE_LOAD_PLUGINS": "",
        "ORACLE_MODEL": "openai/fake-model",
        "ORACLE_API_BASE": api_base,
        "OPENAI_API_KEY": "sk-fake",
        "ORACLE_API_TOKEN": "",
        **extra,
    }
