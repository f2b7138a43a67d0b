"""Fixtures for the memory plugin's tests (the harness's ``oracle_factory`` does the rest)."""

from __future__ import annotations

import oracle_plugin_memory
import pytest

from oracle_core import Oracle
from oracle_core.testing import OracleFactory


@pytest.fixture
def oracle(oracle_factory: OracleFactory) -> Oracle:
    """An oracle with the memory plugin, on the test's own ``ORACLE_HOME``."""
    return oracle_factory(oracle_plugin_memory)
