"""``oracle threads``: a delete that nobody can confirm is refused, and one token figure
under one name in the listing and in ``threads show``."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from cli_support import oracle

from oracle_core.store.sqlite.checkpointer import SQLiteCheckpointer
from oracle_core.values.messages import Usage
from oracle_core.values.threads import RunRecord


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A store with thread ``porto``: two messages, one run that used 900 + 40 tokens."""

    async def write() -> None:
        store = SQLiteCheckpointer(tmp_path / "oracle.db")
        run = RunRecord(id="r1", thread_id="porto", status="completed", usage=Usage(900, 40))
        messages = [
            {"role": "user", "content": "Weather in Porto?"},
            {"role": "assistant", "content": "Rain in Porto, all week long."},
        ]
        await store.append("porto", base=0, messages=messages, run=run)
        await store.close()

    asyncio.run(write())
    return tmp_path


@pytest.mark.parametrize("stdin", [None, "", "y\n", "yes\n"])
def test_delete_without_yes_off_a_terminal_is_refused(home: Path, stdin: str | None) -> None:
    code, out, err = oracle(home, "threads", "delete", "porto", stdin=stdin)
    _, listing, _ = oracle(home, "threads", "--json")

    assert code == 2
    assert "pass --yes" in err
    assert err.count("\n") == 1
    assert "Deleted" not in out
    assert [t["thread_id"] for t in json.loads(listing)] == ["porto"]


@pytest.mark.parametrize("flag", ["--yes", "-y"])
def test_delete_with_yes_off_a_terminal_deletes(home: Path, flag: str) -> None:
    code, out, _ = oracle(home, "threads", "delete", "porto", flag)

    assert code == 0 and "Deleted thread 'porto'" in out


def test_the_listing_and_show_give_the_same_size_under_one_name(home: Path) -> None:
    _, listing, _ = oracle(home, "threads")
    _, shown, _ = oracle(home, "threads", "show", "porto")
    _, exported, _ = oracle(home, "threads", "export", "porto")

    header, row = listing.splitlines()[:2]
    size = sum(json.loads(exported)["message_tokens"])
    assert header.split() == ["THREAD", "LAST", "ACTIVITY", "MESSAGES", "SIZE", "RUNS"]
    assert f"{size} tokens" in row
    assert f"size {size} tokens" in shown.splitlines()[0]


def test_show_names_the_tokens_used_apart_from_the_size(home: Path) -> None:
    _, shown, _ = oracle(home, "threads", "show", "porto")

    first = shown.splitlines()[0]
    assert "used 900 prompt + 40 completion tokens" in first
    assert len(re.findall(r"\d+ tokens", first)) == 1  # the size; the rest is "used"
