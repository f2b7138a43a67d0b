"""The ``[aliases]`` table of ``oracle.toml``: short names for model strings::

[aliases]
fast = "openai/gpt-4o-mini"      # ORACLE_MODEL=fast, --model fast, Oracle(model="fast")
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oracle_core.settings.reading import bad_config_value


def read_aliases(path: Path, data: Mapping[str, Any]) -> dict[str, str]:
    """The ``[aliases]`` of ``oracle.toml`` at ``path``, read as ``data``: name to model string.

    Raises:
        ConfigError: an alias that is not a non-empty string, or whose name contains ``/``
            (it could never be told from a model string), naming its line.
    """
    aliases = data.get("aliases", {})
    for name, target in aliases.items():
        if "/" in name or not name.strip():
            raise bad_config_value(path, f"aliases.{name}", name, "an alias name without '/'")
        if not isinstance(target, str) or not target.strip():
            raise bad_config_value(path, f"aliases.{name}", target, "a model string")
    return {name: target.strip() for name, target in aliases.items()}
