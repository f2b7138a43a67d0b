"""Fixtures of the plugin tests."""

from __future__ import annotations

import pytest

from oracle_core.plugins import installed


@pytest.fixture
def only_the_path_finder(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a fresh process: an earlier test in this one may have left a finder that can
    report distributions on ``sys.meta_path``, and then every start scans instead of
    reading the start-up cache (tests/plugins/test_startup_scan.py tests that)."""
    monkeypatch.setattr(installed, "only_path_finder", lambda: True)
