"""Shared fixtures."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import SitePackages


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SitePackages]:
    """A fresh site-packages-like folder on ``sys.path`` for this test only."""
    root = tmp_path / "site-packages"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    packages = SitePackages(root)
    yield packages
    for module in packages.modules:
        sys.modules.pop(module, None)
