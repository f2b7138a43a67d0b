"""MCP both ways: what the oracle adds to a tool call, against the MCP server called directly.

A FastMCP server (``tests/mcp_server.py``, stdio) is called directly by the SDK's client, and
through ``oracle mcp`` (stdio), which imports that server as the plugin ``arith`` and
exports it gated: the same ``arith_add`` call then crosses two MCP hops, the gate, the
argument check and the tool executor. Printed: start-up until the first ``tools/list``,
and p50/p99 of one call, side by side.

Run: ``.venv/bin/python bench/mcp_calls.py [--calls 200]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).parent))
from common import quantile

SERVER = str(Path(__file__).resolve().parents[1] / "tests" / "mcp_server.py")


async def measure(params: StdioServerParameters, tool: str, calls: int, load: bool) -> list[float]:
    """[start-up ms, then each call's ms]."""
    start = time.perf_counter()
    async with Client(params, mode="legacy", cache=None) as client:
        await client.list_tools()
        figures = [(time.perf_counter() - start) * 1000]
        if load:
            await client.call_tool("load_capability", {"names": ["arith"]})
        for index in range(calls):
            began = time.perf_counter()
            result = await client.call_tool(tool, {"a": index, "b": 1})
            figures.append((time.perf_counter() - began) * 1000)
            assert not result.is_error, result
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        Path(home, "oracle.toml").write_text(
            f"[mcp.arith]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n"
        )
        env = {**os.environ, "ORACLE_HOME": home, "ORACLE_LOAD_PLUGINS": "arith"}
        direct = StdioServerParameters(command=sys.executable, args=[SERVER], env=env)
        oracle = StdioServerParameters(
            command=str(Path(sys.executable).with_name("oracle")), args=["mcp"], env=env
        )
        rows = [
            ("FastMCP server, direct", anyio.run(measure, direct, "add", args.calls, False)),
            ("through oracle mcp", anyio.run(measure, oracle, "arith_add", args.calls, True)),
        ]
    head = f"{'path':26}  {'start-up ms':>11}  {'call p50 ms':>11}  {'call p99 ms':>11}"
    print(head)
    print("-" * len(head))
    for name, (startup, *samples) in rows:
        print(
            f"{name:26}  {startup:11.0f}  {statistics.median(samples):11.2f}  "
            f"{quantile(samples, 0.99):11.2f}"
        )


if __name__ == "__main__":
    main()
