"""The offline demo model answers on every surface, the specialist one included."""

from __future__ import annotations

import pytest
from support import CodePlugin

from oracle_core import Oracle, Specialist
from oracle_core.models.demo import DemoModel
from oracle_core.store import MemoryCheckpointer


@pytest.mark.parametrize("prompt", ["Hello there", "greet Ana", ""])
async def test_on_a_specialist_surface_the_demo_model_answers_without_a_capability_list(
    prompt: str,
) -> None:
    # A specialist surface sends no list_capabilities: the demo model had called it anyway,
    # then failed the run reading the refusal as a list (docs/surfaces.md with --model demo).
    plugin = CodePlugin("greeter", tools=("greet",))
    oracle = Oracle(
        [plugin],
        entry_points=False,
        model=DemoModel(),
        checkpointer=MemoryCheckpointer(),
        surface=Specialist(tools=["greeter.greet"]),
    )
    try:
        result = await oracle.run("t", prompt or "?")
    finally:
        await oracle.close()

    assert result.status == "completed", result.error
    assert "no capability list" in (result.answer or "")
    assert plugin.calls == []
