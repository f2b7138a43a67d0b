"""``oracle connections`` as subprocesses: set (from stdin), list, delete, keygen, rotate."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from connections_plugin import PLUGIN_CODE, fingerprint
from support import SitePackages

from oracle_core.credentials.vault import generate_key
from oracle_core.testing.openai_server import FakeOpenAI, Reply

pytestmark = pytest.mark.slow  # runs subprocesses

VALUE = "ghp_cli_5e1f0a9b8c7d6e5f4a3b"
OTHER = "ghp_cli_other_0011223344"


@pytest.fixture
def env(site: SitePackages, fake_openai: FakeOpenAI) -> dict[str, str]:
    site.add("oracle-plugin-vaulted", PLUGIN_CODE, entry_point="vaulted")
    home = site.root / "home"
    return {
        **os.environ,
        "PYTHONPATH": str(site.root),
        "ORACLE_HOME": str(home),
        "ORACLE_LOAD_PLUGINS": "vaulted",
        "ORACLE_MODEL": "openai/fake-model",
        "ORACLE_API_BASE": fake_openai.url,
        "OPENAI_API_KEY": "sk-fake",
        "ORACLE_SECRET_KEY": generate_key(),
        "ORACLE_PLUGIN_VAULTED__LOG": str(site.root / "calls.jsonl"),
    }


def oracle(env: dict[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oracle_core", *args],
        env=env, input=stdin, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def calls(env: dict[str, str]) -> list[dict[str, object]]:
    log = Path(env["ORACLE_PLUGIN_VAULTED__LOG"])
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_set_reads_the_value_from_stdin_and_list_shows_it_set_without_it(
    env: dict[str, str],
) -> None:
    before = json.loads(oracle(env, "connections", "list", "--json").stdout)
    done = oracle(env, "connections", "set", "vaulted", "token", "--user", "alice",
                  stdin=VALUE + "\n")  # fmt: skip
    listed = oracle(env, "connections", "list", "--json")
    text = oracle(env, "connections", "list")

    assert done.returncode == 0, done.stderr
    assert "Set connection 'token' of plugin 'vaulted' for user 'alice'." in done.stdout
    assert [(c["connection"], c["user_id"], c["set"]) for c in before] == [
        ("token", None, False),
        ("org", None, False),
        ("oauth", None, False),
    ]
    lines = json.loads(listed.stdout)
    assert [(c["connection"], c["user_id"], c["set"]) for c in lines] == [
        ("token", "alice", True),
        ("org", None, False),
        ("oauth", None, False),
    ]
    assert lines[0]["help"] == "A personal access token from Settings > Tokens."
    assert "vaulted/token" in text.stdout and "alice" in text.stdout and "not set" in text.stdout
    for output in (done, listed, text):
        assert VALUE not in output.stdout + output.stderr


def test_the_value_is_never_taken_from_the_command_line(env: dict[str, str]) -> None:
    done = oracle(env, "connections", "set", "vaulted", "token", VALUE)

    assert done.returncode == 2  # click: no such argument
    assert json.loads(oracle(env, "connections", "list", "--json").stdout)[0]["set"] is False


def test_list_for_one_user_shows_theirs_and_the_shared_ones(env: dict[str, str]) -> None:
    oracle(env, "connections", "set", "vaulted", "token", "--user", "alice", stdin=VALUE)
    oracle(env, "connections", "set", "vaulted", "org", stdin=OTHER)

    bob = json.loads(oracle(env, "connections", "list", "--user", "bob", "--json").stdout)

    assert [(c["connection"], c["user_id"], c["set"]) for c in bob] == [
        ("token", "bob", False),
        ("org", None, True),
        ("oauth", "bob", False),
    ]


def test_delete_removes_it(env: dict[str, str]) -> None:
    oracle(env, "connections", "set", "vaulted", "token", stdin=VALUE)

    gone = oracle(env, "connections", "delete", "vaulted", "token")
    again = oracle(env, "connections", "delete", "vaulted", "token")

    assert "Deleted connection 'token' of plugin 'vaulted'." in gone.stdout
    assert "was not set" in again.stdout
    assert json.loads(oracle(env, "connections", "list", "--json").stdout)[0]["set"] is False


def test_set_without_a_key_fails_naming_the_variable_and_stores_nothing(
    env: dict[str, str],
) -> None:
    env = {k: v for k, v in env.items() if k != "ORACLE_SECRET_KEY"}

    done = oracle(env, "connections", "set", "vaulted", "token", stdin=VALUE)

    assert done.returncode == 1
    assert "ORACLE_SECRET_KEY is not set" in done.stderr
    assert "oracle connections keygen" in done.stderr
    assert json.loads(oracle(env, "connections", "list", "--json").stdout)[0]["set"] is False


@pytest.mark.parametrize(
    ("plugin", "name", "words"),
    [("vaulted", "tokn", "did you mean 'token'?"), ("nope", "token", "no plugin 'nope'")],
)
def test_set_for_an_unknown_connection_fails_naming_what_exists(
    env: dict[str, str], plugin: str, name: str, words: str
) -> None:
    done = oracle(env, "connections", "set", plugin, name, stdin=VALUE)

    assert done.returncode == 1
    assert words in done.stderr


def test_an_empty_or_multi_line_value_is_refused(env: dict[str, str]) -> None:
    empty = oracle(env, "connections", "set", "vaulted", "token", stdin="\n")

    assert empty.returncode == 1
    assert "is empty" in empty.stderr


def test_keygen_makes_a_working_key_and_rotate_reseals_with_it(env: dict[str, str]) -> None:
    old = env["ORACLE_SECRET_KEY"]
    oracle(env, "connections", "set", "vaulted", "token", stdin=VALUE)
    new = oracle(env, "connections", "keygen").stdout.strip()

    rotated = oracle({**env, "ORACLE_SECRET_KEY": f"{new},{old}"}, "connections", "rotate")

    assert len(new) == 44 and new != old
    assert "Re-sealed 1 credential(s)" in rotated.stdout
    db = sqlite3.connect(Path(env["ORACLE_HOME"]) / "oracle.db")
    (sealed,) = db.execute("SELECT sealed FROM oracle_credentials").fetchone()
    db.close()
    from oracle_core.credentials.vault import Vault

    assert Vault([new]).open("vaulted", "token", "default", sealed).reveal() == VALUE


def test_a_run_waits_for_its_connection_and_set_resumes_it_once(
    env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.call("whoami", {}), Reply.text("You are signed in."))

    asked = oracle(env, "ask", "Who am I?", "--thread", "t1", "--user", "alice", "--json")
    turn = json.loads(asked.stdout)
    (operation,) = turn["operations"]

    assert turn["status"] == "waiting_for_connection"
    assert operation["kind"] == "connection" and operation["status"] == "pending"
    assert operation["plugin"] == "vaulted" and operation["user_id"] == "alice"
    assert operation["details"]["connection"] == "token"
    assert operation["details"]["help"] == "A personal access token from Settings > Tokens."
    assert calls(env) == []

    supplied = oracle(env, "connections", "set", "vaulted", "token", "--user", "alice", "--json",
                      stdin=VALUE)  # fmt: skip
    again = oracle(env, "connections", "set", "vaulted", "token", "--user", "alice", "--json",
                   stdin=VALUE)  # fmt: skip

    assert supplied.returncode == 0, supplied.stderr
    (resumed,) = json.loads(supplied.stdout)["resumed"]
    assert resumed["status"] == "completed" and resumed["answer"] == "You are signed in."
    assert json.loads(again.stdout)["resumed"] == []
    assert calls(env) == [{"tool": "whoami", "user": "alice", "key": fingerprint(VALUE)}]
    seen = json.dumps([r.body for r in fake_openai.requests])
    assert f"signed in with key {fingerprint(VALUE)}" in seen
    for text in (seen, asked.stdout, asked.stderr, supplied.stdout, supplied.stderr):
        assert VALUE not in text


def test_ask_says_what_it_waits_for_and_how_to_set_it(
    env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.call("whoami", {}), Reply.text("ok"))

    asked = oracle(env, "ask", "Who am I?", "--user", "alice")
    supplied = oracle(env, "connections", "set", "vaulted", "token", "--user", "alice",
                      stdin=VALUE)  # fmt: skip

    assert asked.returncode not in (0, 1)  # waiting: neither an answer nor a failure
    assert "Waiting for connection 'token' of plugin 'vaulted'" in asked.stdout
    assert "oracle connections set vaulted token --user alice" in asked.stdout
    assert "resumed run" in supplied.stdout and "completed" in supplied.stdout
    assert "ok" in supplied.stdout


def test_two_processes_setting_it_at_once_resume_the_run_exactly_once(
    env: dict[str, str], fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(Reply.call("whoami", {}), Reply.text("Signed in."))
    oracle(env, "ask", "Who am I?", "--user", "alice")
    args = [sys.executable, "-m", "oracle_core", "connections", "set", "vaulted", "token",
            "--user", "alice", "--json"]  # fmt: skip

    setters = [
        subprocess.Popen(
            args,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(VALUE, timeout=120) for p in setters]

    assert [p.returncode for p in setters] == [0, 0], [err for _, err in outputs]
    resumed = [json.loads(out)["resumed"] for out, _ in outputs]
    assert sorted(len(r) for r in resumed) == [0, 1]
    assert len(calls(env)) == 1


def test_on_a_terminal_the_value_is_read_from_a_hidden_prompt(env: dict[str, str]) -> None:
    import pexpect

    child = pexpect.spawn(
        sys.executable,
        ["-m", "oracle_core", "connections", "set", "vaulted", "token", "--user", "alice"],
        env=env,
        encoding="utf-8",
        timeout=60,
    )
    child.expect(r"Value for connection 'token' of plugin 'vaulted' \(hidden\): ")
    child.sendline(VALUE)
    child.expect(pexpect.EOF)
    child.close()

    assert child.exitstatus == 0, child.before
    assert "Set connection 'token' of plugin 'vaulted' for user 'alice'." in child.before
    assert VALUE not in child.before  # not echoed
    listed = json.loads(oracle(env, "connections", "list", "--json").stdout)
    assert (listed[0]["user_id"], listed[0]["set"]) == ("alice", True)
