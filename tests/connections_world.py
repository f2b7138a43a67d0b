"""A world of users, connections and keys for the connection tests."""

from __future__ import annotations

import json
from typing import Any

from connections_plugin import PLUGIN_CODE
from support import SitePackages

from oracle_core import (
    Checkpointer,
    Oracle,
    RunResult,
    Settings,
)
from oracle_core.credentials.vault import SECRET_KEY_VARIABLE
from oracle_core.testing.script import Reply
from oracle_core.testing.scripted import ModelCall, ScriptedModel

ALICE_KEY = "ghp_alice_9f8e7d6c5b4a39281706"


ORG_KEY = "org_live_44ffee11aa22bb33cc55"


class World:
    """The vaulted plugin installed, an oracle over a real SQLite file, a scripted model."""

    def __init__(self, site: SitePackages, key: str) -> None:
        site.add("oracle-plugin-vaulted", PLUGIN_CODE, entry_point="vaulted")
        self.root = site.root
        self.log = site.root / "calls.jsonl"
        self.env = {
            "ORACLE_HOME": str(site.root / "home"),
            "ORACLE_LOAD_PLUGINS": "vaulted",
            SECRET_KEY_VARIABLE: key,
            "ORACLE_PLUGIN_VAULTED__LOG": str(self.log),
        }
        self.model = ScriptedModel().respond_with(follow_orders)
        self.oracles: list[Oracle] = []

    def oracle(
        self, checkpointer: Checkpointer | None = None, plugins: tuple[Any, ...] = (), **env: str
    ) -> Oracle:
        made = Oracle(
            list(plugins),
            settings=Settings.from_env({**self.env, **env}),
            path=[str(self.root)],
            model=self.model,
            checkpointer=checkpointer,
        )
        self.oracles.append(made)
        return made

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def stored_bytes(self) -> bytes:
        home = self.root / "home"
        return b"".join(p.read_bytes() for p in home.iterdir() if p.name.startswith("oracle.db"))

    def model_text(self) -> str:
        return json.dumps([r.body for r in self.model.requests])


async def ask(oracle: Oracle, thread: str, user: str, *calls: str) -> RunResult:
    return await oracle.run(thread, "call " + " ".join(calls), user_id=user)


def follow_orders(seen: ModelCall) -> Reply | str:
    """Call the tools the user's message names ("call whoami peek"), one a step, then answer.

    Steps are counted from the thread's last user message, so a run that stopped to wait
    and resumed later carries on where it was.
    """
    messages = seen.messages
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    orders = str(messages[last_user]["content"]).removeprefix("call ").split()
    done = sum(1 for m in messages[last_user:] if m["role"] == "assistant")
    if done >= len(orders):
        return "Done."
    name = orders[done]  # "leaky" returns its Secret, "leaky!" raises with it
    if name.startswith("leaky"):
        return Reply.call("leaky", {"how": "raise" if name.endswith("!") else "return"})
    if name == "delete_repo":
        return Reply.call(name, {"repo": "octo/demo"})
    return Reply.call(name, {})
