"""``oracle logs``: the most recent runs across threads, with model, tokens and duration."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from oracle_core.cli import main
from oracle_core.cli.logs import recent_runs
from oracle_core.store.sqlite.checkpointer import SQLiteCheckpointer
from oracle_core.values.messages import Message, Usage
from oracle_core.values.threads import RunRecord, ThreadState, ThreadSummary

T0 = 1_780_000_000.0  # a fixed start, so the listing's order and durations are known


def run(
    run_id: str,
    thread: str,
    start: float,
    *,
    model: str | None = "openai/gpt-4o-mini",
    **kw: object,
) -> RunRecord:
    fields: dict[str, object] = {"status": "completed", "steps": 1, "usage": Usage(100, 20)}
    fields.update(kw)
    return RunRecord(
        id=run_id,
        thread_id=thread,
        created_at=T0 + start,
        updated_at=T0 + start + 2.5,
        model=model,
        **fields,  # type: ignore[arg-type]
    )


def turn(question: str, answer: str) -> list[Message]:
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


def save(home: Path, thread: str, turns: list[tuple[list[Message], RunRecord]]) -> None:
    async def write() -> None:
        store = SQLiteCheckpointer(home / "oracle.db")
        base = len((await store.load(thread)).messages)
        for messages, record in turns:
            await store.append(thread, base=base, messages=messages, run=record)
            base += len(messages)
        await store.close()

    asyncio.run(write())


def oracle(home: Path, *args: str) -> tuple[int, str, str]:
    env = {"ORACLE_HOME": str(home), "ORACLE_LOAD_PLUGINS": ""}
    result = CliRunner().invoke(main, ["logs", *args], env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """Two threads: ``porto`` (runs at 0 s and 20 s) and ``lisbon`` (a run at 10 s)."""
    save(
        tmp_path,
        "porto",
        [
            (turn("Weather in Porto?\nand tomorrow", "Rain."), run("run-p1", "porto", 0)),
            (turn("And on Sunday?", "Sun."), run("run-p2", "porto", 20, usage=Usage(300, 40))),
        ],
    )
    save(tmp_path, "lisbon", [(turn("Weather in Lisbon?", "Clear."), run("run-l1", "lisbon", 10))])
    return tmp_path


def rows(out: str) -> list[str]:
    return out.strip().splitlines()[1:]


def test_runs_on_every_thread_are_listed_newest_first_with_model_and_tokens(home: Path) -> None:
    code, out, _ = oracle(home)

    assert code == 0
    assert out.splitlines()[0].split() == [
        "WHEN", "THREAD", "RUN", "STATUS", "MODEL", "TOKENS", "STEPS", "DURATION", "MESSAGE"
    ]  # fmt: skip
    assert [line.split()[2] for line in rows(out)] == ["run-p2", "run-l1", "run-p1"]
    newest = rows(out)[0]
    assert "porto" in newest and "completed" in newest and "openai/gpt-4o-mini" in newest
    assert "300 + 40" in newest and "2.5s" in newest and "And on Sunday?" in newest
    when = datetime.fromtimestamp(T0 + 20).astimezone().isoformat(timespec="seconds")
    assert newest.startswith(when)


def test_a_message_shows_its_first_line_only(home: Path) -> None:
    _, out, _ = oracle(home)

    oldest = rows(out)[-1]
    assert oldest.endswith("Weather in Porto?")


@pytest.mark.parametrize(
    ("options", "runs"),
    [
        pytest.param(("-n", "2"), ["run-p2", "run-l1"], id="count keeps the newest runs"),
        pytest.param(("--thread", "porto"), ["run-p2", "run-p1"], id="thread keeps its runs"),
    ],
)
def test_count_and_thread_narrow_the_listing(
    home: Path, options: tuple[str, str], runs: list[str]
) -> None:
    _, out, _ = oracle(home, *options)

    assert [line.split()[2] for line in rows(out)] == runs


def test_count_zero_lists_every_run(home: Path) -> None:
    _, out, _ = oracle(home, "--count", "0")

    assert len(rows(out)) == 3


def test_an_unknown_thread_is_an_error_naming_it(home: Path) -> None:
    code, _, err = oracle(home, "--thread", "nosuch")

    assert code == 1
    assert "no thread 'nosuch'" in err


def test_json_prints_one_object_per_run(home: Path) -> None:
    _, out, _ = oracle(home, "--json", "-n", "1")

    [data] = json.loads(out)
    assert data["id"] == "run-p2" and data["thread_id"] == "porto"
    assert data["model"] == "openai/gpt-4o-mini" and data["status"] == "completed"
    assert data["usage"]["prompt_tokens"] == 300 and data["usage"]["completion_tokens"] == 40
    assert data["steps"] == 1 and data["duration"] == 2.5
    assert data["created_at"] == T0 + 20
    assert data["message"] == "And on Sunday?"


def test_a_failed_run_shows_its_status_and_error(tmp_path: Path) -> None:
    failed = run("run-f", "broken", 0, status="failed", error="no API key for openai")
    save(tmp_path, "broken", [([{"role": "user", "content": "Hello?"}], failed)])

    _, out, _ = oracle(tmp_path)

    assert "failed" in rows(out)[0]
    assert "run-f failed: no API key for openai" in out


def test_a_run_saved_before_models_were_recorded_shows_a_dash(tmp_path: Path) -> None:
    old = run("run-old", "old", 0, model=None).to_json()
    del old["model"]  # as a record saved before the field existed
    save(tmp_path, "old", [(turn("Hi", "Hello."), RunRecord.from_json(old))])

    _, out, _ = oracle(tmp_path)

    assert rows(out)[0].split()[4] == "-"


def test_no_runs_says_how_to_make_one(tmp_path: Path) -> None:
    code, out, _ = oracle(tmp_path)

    assert code == 0
    assert "No runs yet" in out


class _Threads:
    """A thread store that records which threads were read (the two methods logs uses)."""

    def __init__(self, states: list[ThreadState]) -> None:
        self.states = {s.thread_id: s for s in states}
        self.loaded: list[str] = []

    async def thread_summaries(self, *, limit: int | None = None) -> list[ThreadSummary]:
        summaries = [
            ThreadSummary(s.thread_id, s.runs[0].created_at, s.runs[-1].updated_at)
            for s in self.states.values()
        ]
        return sorted(summaries, key=lambda s: s.updated_at, reverse=True)[:limit]

    async def load(self, thread_id: str) -> ThreadState:
        self.loaded.append(thread_id)
        return self.states[thread_id]


def test_the_listing_reads_only_the_threads_it_needs() -> None:
    def thread(name: str, *starts: float) -> ThreadState:
        runs = [run(f"run-{name}{i}", name, start) for i, start in enumerate(starts)]
        return ThreadState(name, turn("Hi", "Hello.") * len(runs), runs=runs)

    store = _Threads([thread("new", 30, 40), thread("mid", 20), thread("old", 0)])

    runs = asyncio.run(recent_runs(store, 2))  # type: ignore[arg-type]

    assert runs is not None and [r.record.id for r in runs] == ["run-new1", "run-new0"]
    assert store.loaded == ["new"]  # "mid" last changed before both started: never read


def test_logs_does_not_import_litellm(home: Path) -> None:
    code = (
        "import sys\nfrom oracle_core.cli import main\n"
        "try:\n    main(['logs'])\nexcept SystemExit:\n    pass\n"
        "print('litellm' in sys.modules, file=sys.stderr)\n"
    )
    env = {**os.environ, "ORACLE_HOME": str(home), "ORACLE_LOAD_PLUGINS": ""}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )

    assert result.stderr.strip().endswith("False"), result.stderr
    assert "run-p2" in result.stdout


async def test_a_run_records_the_model_it_called(tmp_path: Path) -> None:
    from oracle_core import Oracle
    from oracle_core.settings import Settings
    from oracle_core.store import MemoryCheckpointer
    from oracle_core.testing import ScriptedModel

    store = MemoryCheckpointer()
    model = ScriptedModel("openai/gpt-test").respond_with(lambda call: "Hello.")
    oracle = Oracle(
        [],
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)}),
        checkpointer=store,
        model=model,
    )
    async with oracle:
        await oracle.run("t", "Hi")
        [record] = (await store.load("t")).runs

    assert record.model == "openai/gpt-test"
    assert [r.record.model for r in await recent_runs(store, 1) or []] == ["openai/gpt-test"]


# -- llm's options: -c, -m, --short -----------------------------------------------------------


def test_current_lists_the_runs_of_the_conversation_saved_to_last(home: Path) -> None:
    code, out, _ = oracle(home, "-c")

    assert code == 0
    assert [line.split()[2] for line in rows(out)] == ["run-p2", "run-p1"]


def test_current_and_a_thread_together_are_a_usage_error(home: Path) -> None:
    code, _, err = oracle(home, "-c", "--thread", "porto")

    assert code == 2
    assert "-c/--current or --thread ID, not both" in err


def test_model_lists_only_the_runs_that_called_it(tmp_path: Path) -> None:
    save(tmp_path, "a", [(turn("Hi", "Hello."), run("run-a", "a", 0, model="openai/small"))])
    save(tmp_path, "b", [(turn("Yo", "Hey."), run("run-b", "b", 5, model="openai/large"))])
    save(tmp_path, "c", [(turn("Hm", "Ok."), run("run-c", "c", 9, model="openai/small"))])

    _, out, _ = oracle(tmp_path, "-m", "openai/small", "-n", "1")
    _, none, _ = oracle(tmp_path, "-m", "openai/absent")

    assert [line.split()[2] for line in rows(out)] == ["run-c"]
    assert none.strip() == "No runs of openai/absent yet."


def test_model_takes_an_alias_of_oracle_toml(tmp_path: Path) -> None:
    (tmp_path / "oracle.toml").write_text('[aliases]\nsmall = "openai/small"\n')
    save(tmp_path, "a", [(turn("Hi", "Hello."), run("run-a", "a", 0, model="openai/small"))])
    save(tmp_path, "b", [(turn("Yo", "Hey."), run("run-b", "b", 5, model="openai/large"))])

    _, out, _ = oracle(tmp_path, "--model", "small")

    assert [line.split()[2] for line in rows(out)] == ["run-a"]


def test_short_prints_one_yaml_entry_a_run(home: Path) -> None:
    yaml = pytest.importorskip("yaml")

    code, out, _ = oracle(home, "--short", "-n", "2")

    assert code == 0
    entries = yaml.safe_load(out)
    assert [e["run"] for e in entries] == ["run-p2", "run-l1"]
    assert entries[0] == {
        "model": "openai/gpt-4o-mini",
        "datetime": datetime.fromtimestamp(T0 + 20).astimezone().isoformat(timespec="seconds"),
        "thread": "porto",
        "run": "run-p2",
        "status": "completed",
        "prompt": "And on Sunday?",
    }


@pytest.mark.parametrize("seed", range(4))
def test_the_oracles_own_count_is_marked_and_explained(tmp_path: Path, seed: int) -> None:
    import random

    rng = random.Random(seed)
    prompt, completion = rng.randrange(1, 5000), rng.randrange(0, 500)
    usage = Usage(prompt, completion, estimated=True)
    save(tmp_path, "t", [(turn("Hi", "Hello."), run("run-e", "t", 0, usage=usage))])
    save(tmp_path, "u", [(turn("Yo", "Hey."), run("run-r", "u", 5, usage=Usage(7, 3)))])

    _, out, _ = oracle(tmp_path)

    reported, estimated = rows(out)[:2]
    assert f"  ~{prompt} + {completion}  " in estimated
    assert "7 + 3" in reported and "~" not in reported
    assert "~: the oracle's own count (o200k_base); the provider reported none" in out
