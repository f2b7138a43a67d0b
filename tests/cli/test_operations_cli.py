"""``oracle ask`` on a call that needs approval, and ``oracle operations``, as subprocesses."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support import SitePackages

from oracle_core.testing.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.slow  # runs subprocesses: `pytest -m 'not slow'` skips it

PLUGIN = '''
import os
from oracle_core import PluginManifest, hookimpl, tool


@tool(approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    with open(os.environ["WAITS_LOG"], "a", encoding="utf-8") as handle:
        handle.write(path + "\\n")
    return "deleted " + path


@hookimpl
def oracle_manifest():
    return PluginManifest(name="files", summary="Files.", when_to_use=["files"], visibility="always")


@hookimpl
def oracle_tools():
    return [delete]
'''

Oracle = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def log(site: SitePackages) -> Path:
    return site.root / "executions.log"


@pytest.fixture
def oracle(site: SitePackages, fake_openai: FakeOpenAI, log: Path) -> Oracle:
    site.add("oracle-plugin-files", PLUGIN, entry_point="files")
    env = {
        **os.environ,
        "PYTHONPATH": str(site.root),
        "ORACLE_HOME": str(site.root / "home"),
        "ORACLE_LOAD_PLUGINS": "files",
        "ORACLE_MODEL": "openai/fake-model",
        "ORACLE_API_BASE": fake_openai.url,
        "OPENAI_API_KEY": "sk-fake",
        "WAITS_LOG": str(log),
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "oracle_core", *args],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip

    return run


def executions(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def asked(oracle: Oracle, fake_openai: FakeOpenAI, thread: str, *extra: str) -> str:
    """``oracle ask`` a turn that must wait; the operation id it prints."""
    fake_openai.script(Reply.call("delete", {"path": f"{thread}.txt"}), Reply.text("All done."))
    done = oracle("ask", "delete it", "--thread", thread, *extra)
    assert done.returncode == 3, done.stderr
    found = re.search(r"oracle operations approve (op_[0-9a-f]+)", done.stdout)
    assert found, done.stdout
    return found.group(1)


def test_ask_prints_what_it_waits_for_and_how_to_decide(
    oracle: Oracle, fake_openai: FakeOpenAI, log: Path
) -> None:
    fake_openai.script(Reply.call("delete", {"path": "a.txt"}))
    done = oracle("ask", "delete a.txt", "--thread", "t")

    assert done.returncode == 3, done.stderr
    assert 'Waiting for approval of files.delete({"path":"a.txt"})' in done.stdout
    op = re.search(r"operation (op_[0-9a-f]+)", done.stdout).group(1)  # type: ignore[union-attr]
    assert f"approve: oracle operations approve {op}" in done.stdout
    assert f"deny:    oracle operations deny {op}" in done.stdout
    assert executions(log) == []


def test_ask_json_has_the_status_and_the_operations(
    oracle: Oracle, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.call("delete", {"path": "a.txt"}))
    done = oracle("ask", "delete a.txt", "--json")

    body = json.loads(done.stdout)
    assert done.returncode == 3
    assert body["status"] == "waiting_for_approval"
    assert [(o["tool"], o["arguments"]) for o in body["operations"]] == [
        ("delete", {"path": "a.txt"})
    ]


def test_operations_lists_and_shows(oracle: Oracle, fake_openai: FakeOpenAI) -> None:
    op = asked(oracle, fake_openai, "t")

    listed = oracle("operations")
    as_json = json.loads(oracle("operations", "--json", "--status", "pending").stdout)
    elsewhere = oracle("operations", "--thread", "nowhere")
    shown = json.loads(oracle("operations", "show", op, "--json").stdout)

    assert listed.returncode == 0, listed.stderr
    assert op in listed.stdout and "approval" in listed.stdout and "pending" in listed.stdout
    assert [o["id"] for o in as_json] == [op]
    assert elsewhere.stdout.strip() == "no operations"
    assert (shown["id"], shown["status"], shown["tool"]) == (op, "pending", "delete")


def test_approve_resumes_in_that_process_once_and_a_different_decision_is_refused(
    oracle: Oracle, fake_openai: FakeOpenAI, log: Path
) -> None:
    op = asked(oracle, fake_openai, "t")

    approved = oracle("operations", "approve", op, "--reason", "fine")
    again = oracle("operations", "approve", op, "--json")
    denied = oracle("operations", "deny", op)

    assert (approved.returncode, approved.stdout) == (0, "All done.\n"), approved.stderr
    assert json.loads(again.stdout)["answer"] == "All done."
    assert denied.returncode == 1
    assert "already settled as approved" in denied.stderr
    assert executions(log) == ["t.txt"]


def test_deny_with_a_reason_answers_as_ask_does_in_json(
    oracle: Oracle, fake_openai: FakeOpenAI, log: Path
) -> None:
    op = asked(oracle, fake_openai, "t")

    denied = oracle("operations", "deny", op, "--reason", "not that one", "--json")

    body = json.loads(denied.stdout)
    assert denied.returncode == 0, denied.stderr
    assert (body["status"], body["answer"], body["operations"]) == ("completed", "All done.", [])
    declined = fake_openai.requests[-1].tool_results
    assert declined and "not that one" in declined[-1]
    assert executions(log) == []


def test_cancel_and_unknown_ids(oracle: Oracle, fake_openai: FakeOpenAI) -> None:
    op = asked(oracle, fake_openai, "t")

    cancelled = oracle("operations", "cancel", op)
    unknown = oracle("operations", "show", "op_doesnotexist")
    late = oracle("operations", "approve", op)

    assert cancelled.stdout.strip() == f"{op}: cancelled"
    assert unknown.returncode == 1 and "no operation has the id" in unknown.stderr
    assert late.returncode == 1 and "cancelled" in late.stderr


def test_show_prints_times_as_iso_8601_local_time(oracle: Oracle, fake_openai: FakeOpenAI) -> None:
    op = asked(oracle, fake_openai, "t")

    shown = oracle("operations", "show", op)
    listed = oracle("operations")

    iso = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d"
    assert re.search(rf'^created_at: "{iso}"$', shown.stdout, re.M), shown.stdout
    assert re.search(rf'^updated_at: "{iso}"$', shown.stdout, re.M)
    assert not re.search(r"\b\d{9,}\.\d+", shown.stdout)  # no epoch floats
    assert re.search(iso, listed.stdout)


def test_deny_without_a_reason_tells_the_model_no_reason(
    oracle: Oracle, fake_openai: FakeOpenAI, log: Path
) -> None:
    op = asked(oracle, fake_openai, "t")

    done = oracle("operations", "deny", op)

    assert done.returncode == 0, done.stderr
    told = next(m for m in fake_openai.requests[-1].messages if m["role"] == "tool")["content"]
    assert "A person declined this call" in told
    assert "Reason" not in told
    assert "needs a person's approval" not in told  # the approval's own "why"
    assert executions(log) == []
