"""API keys stored by name in ``$ORACLE_HOME/keys.json`` (``oracle keys``), like llm's.

The file is a JSON object of names to values, readable by its owner only (mode 0600): each
write goes to a temporary file created with that mode, then replaces the file in one rename,
so a reader never sees half a file and the value is never readable by others, not even for
a moment. Values are never logged.

A model call uses a stored key when neither ``ORACLE_API_KEY`` (or ``--api-key``) nor the
provider's own variable is set: the key named like the provider (the part of the model
string before ``/``, such as ``openai`` or ``anthropic``), else the key named
``ORACLE_API_KEY`` (:func:`stored_key_for`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from oracle_core.errors import ConfigError

KEYS_FILE = "keys.json"
"""The key store's file name inside ``ORACLE_HOME``."""

FALLBACK_NAME = "ORACLE_API_KEY"
"""The stored key used for any provider that has no key of its own name."""


def keys_path(home: Path) -> Path:
    """The key store of the oracle home ``home``."""
    return home / KEYS_FILE


def read_keys(path: Path) -> dict[str, str]:
    """The stored keys (empty when the file does not exist).

    Raises:
        ConfigError: the file is not a JSON object of strings (naming the file and the fix).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{path} is not valid JSON (line {error.lineno}): fix it or remove it and set "
            "the keys again with `oracle keys set NAME`",
            source=str(path),
            line=error.lineno,
            expected="a JSON object of key names to string values",
        ) from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ConfigError(
            f"{path} must be a JSON object of key names to string values: fix it or remove "
            "it and set the keys again with `oracle keys set NAME`",
            source=str(path),
            expected="a JSON object of key names to string values",
        )
    return data


def write_keys(path: Path, keys: Mapping[str, str]) -> None:
    """Replace the stored keys with ``keys``, atomically, the file readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file with mode 0600, so the value is never readable by others.
    descriptor, temporary = tempfile.mkstemp(prefix=".keys-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(dict(sorted(keys.items())), file, indent=2)
            file.write("\n")
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def set_key(path: Path, name: str, value: str) -> None:
    """Store ``value`` under ``name`` (replacing any value it had)."""
    write_keys(path, {**read_keys(path), name: value})


def remove_key(path: Path, name: str) -> bool:
    """Remove the key ``name``; ``False`` when there was none."""
    keys = read_keys(path)
    if name not in keys:
        return False
    del keys[name]
    write_keys(path, keys)
    return True


def provider_of(model: str) -> str:
    """The provider part of a litellm model string (``openai`` of ``openai/gpt-4o``)."""
    return model.split("/", 1)[0] if "/" in model else "openai"


def provider_variable(provider: str) -> str:
    """The provider's own key variable by convention (``OPENAI_API_KEY`` for ``openai``)."""
    return f"{provider.upper().replace('-', '_')}_API_KEY"


def stored_key_for(model: str, home: Path, env: Mapping[str, str]) -> str | None:
    """The stored key a call to ``model`` uses when no key was given explicitly.

    ``None`` when the provider's own variable is set in ``env`` (it wins, as without a
    store), or when no key named like the provider nor ``ORACLE_API_KEY`` is stored.
    """
    provider = provider_of(model)
    if env.get(provider_variable(provider)):
        return None
    keys = read_keys(keys_path(home))
    return keys.get(provider) or keys.get(FALLBACK_NAME)
