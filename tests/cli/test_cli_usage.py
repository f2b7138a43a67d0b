"""``oracle usage``: the ledger grouped by user, thread, model or plugin, from the store."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from oracle_core.cli import main
from oracle_core.store.sqlite.checkpointer import SQLiteCheckpointer
from oracle_core.store.usage import UsageEntry, parse_since

NOW = time.time()


def ledger(home: Path) -> None:
    entries = [
        UsageEntry(NOW - 10 * 86400, "model", "r0", "t0", "ann", "old", prompt_tokens=999),
        UsageEntry(NOW - 60, "model", "r1", "t1", "ann", "openai/gpt-4o-mini",
                   prompt_tokens=100, completion_tokens=20, cost=0.5),
        UsageEntry(NOW - 50, "tool", "r1", "t1", "ann", "openai/gpt-4o-mini", "forecast",
                   "weather"),
        UsageEntry(NOW - 40, "model", "r2", "t2", "bob", "local/llama", prompt_tokens=7,
                   completion_tokens=3),
    ]  # fmt: skip

    async def write() -> None:
        store = SQLiteCheckpointer(home / "oracle.db")
        await store.record_usage(entries)
        await store.close()

    asyncio.run(write())


def usage(home: Path, *args: str) -> tuple[int, str]:
    env = {"ORACLE_HOME": str(home), "ORACLE_LOAD_PLUGINS": ""}
    result = CliRunner().invoke(main, ["usage", *args], env=env)
    return result.exit_code, result.output


def test_usage_lists_tokens_cost_runs_and_tool_calls_per_user(tmp_path: Path) -> None:
    ledger(tmp_path)

    code, output = usage(tmp_path, "--since", "7d")

    assert code == 0, output
    lines = output.splitlines()
    assert lines[0].split() == ["USER", "TOKENS", "IN", "TOKENS", "OUT", "COST", "RUNS",
                                "MODEL", "CALLS", "TOOL", "CALLS"]  # fmt: skip
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows["ann"] == ["100", "20", "$0.5000", "1", "1", "1"]
    assert rows["bob"] == ["7", "3", "unknown", "1", "1", "0"]  # no price: not $0
    assert rows["TOTAL"][:3] == ["107", "23", "$0.5000"]


def test_usage_json_narrows_to_a_user_and_groups_by_plugin(tmp_path: Path) -> None:
    ledger(tmp_path)

    code, output = usage(tmp_path, "--user", "ann", "--by", "plugin", "--json")

    report = json.loads(output)
    assert code == 0
    assert (report["by"], report["user"], report["since"]) == ("plugin", "ann", None)
    assert [(g["key"], g["tool_calls"]) for g in report["groups"]] == [("weather", 1)]
    assert report["total"]["prompt_tokens"] == 1099  # the old call too: no --since


def test_usage_by_model_shows_an_unpriced_model_as_unknown_in_json(tmp_path: Path) -> None:
    ledger(tmp_path)

    code, output = usage(tmp_path, "--by", "model", "--since", "1h", "--json")

    costs = {g["key"]: g["cost"] for g in json.loads(output)["groups"]}
    assert code == 0
    assert costs == {"openai/gpt-4o-mini": 0.5, "local/llama": None}


def test_a_since_that_is_no_time_is_refused_naming_the_forms(tmp_path: Path) -> None:
    code, output = usage(tmp_path, "--since", "last tuesday")

    assert code == 2
    assert "give 7d, 12h or 30m" in output


def test_an_empty_ledger_says_so(tmp_path: Path) -> None:
    code, output = usage(tmp_path)

    assert (code, output.strip()) == (0, "No usage recorded yet.")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2d", 1_000_000.0 - 2 * 86400),
        ("90m", 1_000_000.0 - 5400),
        ("2026-03-01", 1772323200.0),
        ("2026-03-01T12:00+02:00", 1772359200.0),
        ("today", 950400.0),
    ],
)
def test_since_reads_ago_calendar_and_iso_times(text: str, expected: float) -> None:
    assert parse_since(text, 1_000_000.0) == expected
