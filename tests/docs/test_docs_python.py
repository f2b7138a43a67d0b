"""Every ```python block of README.md and docs/*.md runs as written.

A block runs top to bottom in a fresh module (top-level ``await`` allowed, as in
``python -m asyncio``), in a temporary folder with its own ``ORACLE_HOME``, where
``ORACLE_MODEL`` is the scripted OpenAI-compatible server on 127.0.0.1: it answers every
request with a short text, or, when the request asks for JSON of a schema, the smallest JSON
that fits it. A block that is a file (its first line ``# oracle_plugin_x.py``) is written
there and imported; a plugin module must pass ``check_plugin``. A block marked
``<!-- fragment: ... -->`` only has to compile.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import json
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from doc_blocks import Block, all_blocks

from oracle_core import Oracle
from oracle_core.testing import check_plugin
from oracle_core.testing.openai_server import FakeOpenAI, Reply, SeenRequest

BLOCKS = all_blocks("python")
TOP_LEVEL_AWAIT = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


def fitting(schema: dict[str, Any]) -> Any:
    """The smallest JSON value of ``schema`` (objects, arrays and scalars; every key required)."""
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return {key: fitting(value) for key, value in schema.get("properties", {}).items()}
    return {"array": [], "string": "x", "integer": 1, "number": 1.0, "boolean": True}.get(str(kind))


def answer(request: SeenRequest) -> Reply:
    wanted = request.body.get("response_format") or {}
    schema = wanted.get("json_schema", {}).get("schema")
    if schema is not None:
        return Reply.text(json.dumps(fitting(schema)))
    return Reply.text("A short answer.")


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder like a user's: its own ORACLE_HOME, the scripted model, on ``sys.path``."""
    with FakeOpenAI() as server:
        server.respond_with(answer)
        for variable in [v for v in os.environ if v.startswith(("ORACLE_", "OPENAI_"))]:
            monkeypatch.delenv(variable)
        monkeypatch.setenv("ORACLE_HOME", str(tmp_path / "home"))
        monkeypatch.setenv("ORACLE_MODEL", "openai/fake-model")
        monkeypatch.setenv("ORACLE_API_BASE", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
        monkeypatch.chdir(tmp_path)
        monkeypatch.syspath_prepend(str(tmp_path))
        before = set(sys.modules)
        yield tmp_path
        for name in set(sys.modules) - before:
            if name.startswith("oracle_plugin_") or name.startswith("docs_"):
                del sys.modules[name]


def oracles_in(namespace: dict[str, Any]) -> list[Oracle]:
    return [value for value in namespace.values() if isinstance(value, Oracle)]


def execute(block: Block, module: types.ModuleType) -> None:
    """Run ``block`` in ``module``, then close any oracle it left open."""
    code = compile(block.text, block.id, "exec", flags=TOP_LEVEL_AWAIT, dont_inherit=True)
    result = eval(code, module.__dict__)
    if inspect.iscoroutine(result):

        async def run_then_close() -> None:
            await result
            for oracle in oracles_in(module.__dict__):
                await oracle.close()

        asyncio.run(run_then_close())
    else:
        for oracle in oracles_in(module.__dict__):
            oracle.close_sync()


def run_file(block: Block, folder: Path) -> types.ModuleType:
    """Write the file ``block`` is and import it, as ``pip install -e .`` would."""
    assert block.file is not None
    path = folder / block.file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(block.text, encoding="utf-8")
    dotted = block.file.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    sys.modules.pop(dotted, None)  # another test may have imported a module of that name
    importlib.invalidate_caches()
    return importlib.import_module(dotted)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_the_python_block_runs_as_written(block: Block, workdir: Path) -> None:
    code = compile(block.text, block.id, "exec", flags=TOP_LEVEL_AWAIT, dont_inherit=True)
    if block.fragment or (block.file or "").startswith("tests/"):
        # A test file runs under pytest: tests/harness/test_harness_docs.py runs testing.md's.
        assert code is not None
        return
    if block.file:
        module = run_file(block, workdir)
    else:
        module = types.ModuleType(f"docs_{block.page.replace('/', '_')}_{block.line}")
        execute(block, module)
    if callable(getattr(module, "oracle_manifest", None)):
        check_plugin(module)
