"""Where a new plugin gets oracle-core from while ``oracle-core-runtime`` is not on the
package index: the ``pip install`` arguments ``oracle plugin new`` writes into the plugin's
README (and, for a URL, its CI workflow), from ``--core`` or from where the running core
was installed (its PEP 610 ``direct_url.json``).

The plugin's ``pyproject.toml`` keeps the plain dependency ``oracle-core-runtime``: a direct
reference there would be refused by the package index, and pip builds a local one again on
every install, replacing an editable core with a copy.
"""

from __future__ import annotations

import json
import shlex
import tomllib
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from oracle_core.version import DISTRIBUTION


def core_install(core: str | None) -> str:
    """The ``pip install`` arguments that install the core ``core`` names (``""``: the
    package index has it, nothing to install first).

    Args:
        core: a checkout's folder (installed editable: ``-e PATH``), a URL pip takes
            (``git+https://...``, installed as ``oracle-core-runtime @ URL``), the
            distribution's own name (the package index), or ``None`` for where the running
            core came from.

    Raises:
        ValueError: when ``core`` is a folder that is not a checkout of oracle-core.
    """
    if core is None:
        return running_core_install()
    core = core.strip()
    if core == DISTRIBUTION or core.startswith(f"{DISTRIBUTION} @"):
        return "" if core == DISTRIBUTION else shlex.quote(core)
    if "://" in core:
        return shlex.quote(f"{DISTRIBUTION} @ {core}")
    folder = Path(core).expanduser().resolve()
    if _project_name(folder) != DISTRIBUTION:
        raise ValueError(
            f"--core {core}: {folder} is not a checkout of oracle-core (no pyproject.toml "
            f"naming {DISTRIBUTION}); give the folder you cloned oracle-core into, a URL such "
            f"as git+https://.../oracle-core.git, or {DISTRIBUTION} for the package index"
        )
    return f"-e {shlex.quote(str(folder))}"


def running_core_install() -> str:
    """The ``pip install`` arguments of where the running core comes from: the checkout its
    package lives in (``-e PATH``, an editable install or the source tree), else the folder
    or VCS URL at the commit it was installed from (PEP 610); ``""`` when it came from a
    package index, a wheel, or a folder that is gone."""
    checkout = Path(__file__).resolve().parents[2]
    if _project_name(checkout) == DISTRIBUTION:
        return f"-e {shlex.quote(str(checkout))}"
    texts = (d.read_text("direct_url.json") for d in metadata.distributions(name=DISTRIBUTION))
    origin = json.loads(next((text for text in texts if text), "{}"))
    url = str(origin.get("url", ""))
    vcs = origin.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs") and vcs.get("commit_id"):
        return shlex.quote(f"{DISTRIBUTION} @ {vcs['vcs']}+{url}@{vcs['commit_id']}")
    if "dir_info" in origin and url.startswith("file:"):
        folder = Path(url2pathname(unquote(urlsplit(url).path)))
        if _project_name(folder) == DISTRIBUTION:
            return f"-e {shlex.quote(str(folder))}"
    return ""


def is_remote(install: str) -> bool:
    """Whether ``install`` (from :func:`core_install`) works on another machine, a CI runner."""
    return "://" in install and "file://" not in install


def _project_name(folder: Path) -> str | None:
    try:
        data = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return None
    name = data.get("project", {}).get("name")
    return name if isinstance(name, str) else None
