"""A thousand seeded random model responses through the real run loop.

Tool names are drawn from hidden, loaded, meta, silent and made-up names, with case,
whitespace and look-alike variants; arguments from valid, invalid, non-JSON, hostile and
oversized values. Whatever the model sends: no tool runs that was not offered, no run
raises or fails, every call gets exactly one result, and no refusal names a hidden tool or
a silent plugin.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from support import CodePlugin

from oracle_core import MemoryCheckpointer, Model, ModelRequest, ModelResponse, Oracle, Settings
from oracle_core.models.base import assistant_message, tool_call

pytestmark = pytest.mark.slow  # about 10 s: the quick loop leaves it out

RESPONSES = 1_000
SEED = 20261201


def _variants(name: str) -> list[str]:
    return [
        name,
        name.upper(),
        name.capitalize(),
        f" {name}",
        f"{name}\n",
        name.replace("_", "-"),
        name.replace("o", "0"),
        name.replace("a", "а"),  # Cyrillic a
        f"{name}\u200b",
        name[:-1],
    ]


def _arguments(rng: random.Random) -> str:
    pick = rng.randrange(12)
    if pick < 4:
        return json.dumps({"text": rng.choice(["hi", "", "x" * rng.randrange(50), "\ud83d"])})
    if pick == 4:
        return json.dumps({"names": rng.sample(["vault", "spare", "secretive", "nope", "kit"], 2)})
    if pick == 5:
        return rng.choice(["", "{}", "null", "[]", "42", '"s"', "{", "}{", "not json"])
    if pick == 6:
        return "[" * rng.randrange(1_000, 60_000)
    if pick == 7:
        return '{"text": ' + "9" * rng.randrange(4_000, 6_000) + "}"
    if pick == 8:
        return json.dumps({"text": "y" * rng.randrange(200_000, 400_000)})
    if pick == 9:
        return json.dumps({"text": 1, "extra": {"deep": [None] * 3}})
    if pick == 10:
        return "".join(chr(rng.randrange(0, 0x3000)) for _ in range(rng.randrange(1, 40)))
    return json.dumps({"category": "x", "text": "a", "names": "vault"})


class FuzzModel(Model):
    """Step 1 of each run: one to four random tool calls; then a text answer."""

    name = "fuzz"

    def __init__(self, names: list[str], seed: int) -> None:
        self.rng = random.Random(seed)
        self.names = names
        self.offered: dict[str, frozenset[str]] = {}

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.step > 1:
            return ModelResponse(assistant_message("ok", None))
        self.offered[request.run_id] = frozenset(request.tool_names)
        calls = [
            tool_call(self.rng.choice(self.names), _arguments(self.rng), f"call_{i}")
            for i in range(self.rng.randrange(1, 5))
        ]
        return ModelResponse(assistant_message(None, calls))


async def test_a_thousand_random_model_responses_never_run_a_hidden_tool(tmp_path: Path) -> None:
    kit = CodePlugin("kit", visibility="always", tools=("kit_tool", "kit_other"))
    vault = CodePlugin("vault", tools=("vault_tool", "vault_open"))
    spare = CodePlugin("spare", tools=("spare_tool",))
    secretive = CodePlugin("secretive", visibility="silent", tools=("secretive_probe",))
    plugins = [kit, vault, spare, secretive]
    real = [t.name for p in plugins for t in p.tools]
    base = [*real, "list_capabilities", "load_capability", "search_capabilities", "made_up"]
    names = [v for name in base for v in _variants(name)]
    model = FuzzModel(names, SEED)
    oracle = Oracle(
        plugins,
        entry_points=False,
        settings=Settings.from_env({"ORACLE_HOME": str(tmp_path)}),
        model=model,
        checkpointer=MemoryCheckpointer(),
    )
    assert list(oracle.registry.plugins) == ["kit", "vault", "spare", "secretive"]
    for plugin in plugins:
        plugin.calls.clear()

    ran: list[tuple[str, str]] = []  # (run id, tool)
    for index in range(RESPONSES):
        before = {p.name: len(p.calls) for p in plugins}
        result = await oracle.run(f"thread-{index % 250}", f"turn {index}")

        assert result.status == "completed", result.error
        calls = [e for e in result.events if e.type == "tool_call"]
        results = [e for e in result.events if e.type == "tool_result"]
        assert sorted(e.id for e in calls) == sorted(e.id for e in results)
        offered = model.offered[result.run_id]
        for plugin in plugins:
            ran += [(result.run_id, name) for name, _ in plugin.calls[before[plugin.name] :]]
        for call, outcome in zip(calls, results, strict=True):
            if not outcome.refused:
                continue
            hidden = [n for n in real if n not in offered and n != call.name]
            echoed = call.name if len(call.name) <= 64 else f"{call.name[:64]}..."
            text = json.loads(outcome.content)["error"].replace(repr(echoed), "")  # its own name
            assert not [n for n in hidden if n in text], text
            assert "secretive" not in text, text

    assert ran, "the fuzz never ran a tool: it tests nothing"
    assert all(tool in model.offered[run] for run, tool in ran)
    await oracle.close()
