"""Installed-looking distributions written to a folder, for tests of plugin discovery.

What ``pip install`` leaves behind, in two files: ``<module>.py`` and a ``.dist-info``
whose ``oracle.plugins`` entry point loads it. With the folder on ``sys.path`` (or given to
``Oracle(path=[...])``), importlib.metadata finds it like any installed distribution.
"""

from __future__ import annotations

import textwrap
from pathlib import Path


def write_distribution(
    root: Path,
    dist: str,
    code: str,
    *,
    module: str | None = None,
    entry_point: str | None = None,
    version: str = "1.0.0",
) -> Path:
    """Write the module ``module`` (default: ``dist`` with ``_`` for ``-``) holding ``code``
    and the ``.dist-info`` of ``dist`` whose entry point ``entry_point`` (default: the
    module's name) loads it; return the ``.dist-info`` folder.

    ``code`` is dedented first, so a test may indent it with the test's own code. Writing
    a distribution again replaces its files.
    """
    module = module or dist.replace("-", "_")
    (root / f"{module}.py").write_text(textwrap.dedent(code))
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        f"[oracle.plugins]\n{entry_point or module} = {module}\n"
    )
    return info
