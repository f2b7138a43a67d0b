"""RunDeps names the gate and the capability state it runs under (run/deps.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from oracle_core import MemoryCheckpointer, Oracle, Settings
from oracle_core.assembly import with_registry
from oracle_core.capabilities.gate import Gate
from oracle_core.capabilities.state import Capabilities
from oracle_core.run.requests import RequestBuilder


def _oracle(tmp_path: Path) -> Oracle:
    settings = Settings.from_env({"ORACLE_HOME": str(tmp_path / "home")})
    return Oracle(
        entry_points=False, settings=settings, model="demo", checkpointer=MemoryCheckpointer()
    )


async def test_the_gate_and_the_capabilities_are_fields_of_the_deps(tmp_path: Path) -> None:
    oracle = _oracle(tmp_path)
    try:
        deps = await oracle.run_deps()
        assert isinstance(deps.gate, Gate) and deps.gate is deps.requests.gate
        assert isinstance(deps.capabilities, Capabilities)
        assert deps.capabilities is deps.executor.capabilities
        names = {f.name for f in dataclasses.fields(deps)}
        assert {"gate", "capabilities"} <= names
    finally:
        await oracle.close()


async def test_deps_refuse_a_gate_or_capabilities_their_parts_do_not_use(tmp_path: Path) -> None:
    oracle = _oracle(tmp_path)
    try:
        deps = await oracle.run_deps()
        other = RequestBuilder(deps.registry, "other")
        with pytest.raises(ValueError, match="gate"):
            dataclasses.replace(deps, gate=other.gate)
        with pytest.raises(ValueError, match="capabilities"):
            dataclasses.replace(deps, capabilities=Capabilities(deps.registry))
        again = with_registry(deps, other)  # a replaced plugin: both follow the new parts
        assert again.gate is other.gate and again.capabilities is again.executor.capabilities
    finally:
        await oracle.close()
