"""Building isolated oracles for tests from exactly the plugins a test names."""

from __future__ import annotations

import asyncio
import importlib
import json
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

from oracle_core.models.base import Model
from oracle_core.oracle import Oracle
from oracle_core.settings import Settings


def import_plugin(plugin: Any) -> Any:
    """``plugin`` itself, or the module it names when it is a dotted module name."""
    return importlib.import_module(plugin) if isinstance(plugin, str) else plugin


def write_config(home: Path, config: Mapping[str, Mapping[str, Any]]) -> Path:
    """Write ``{plugin: {key: value}}`` as ``[plugins.<plugin>]`` tables of ``home/oracle.toml``.

    Values may be strings, numbers, booleans, lists of those, and ``{"$env": "VAR"}``.
    """
    lines: list[str] = []
    for plugin, values in config.items():
        lines.append(f"[plugins.{json.dumps(plugin)}]")
        lines += [f"{json.dumps(key)} = {_toml(value)}" for key, value in values.items()]
        lines.append("")
    home.mkdir(parents=True, exist_ok=True)
    path = home / "oracle.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return json.dumps(value)  # JSON's strings and numbers are valid TOML
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return (
            "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in value.items()) + " }"
        )
    raise TypeError(f"cannot write {type(value).__name__} {value!r} to oracle.toml")


def run_sync(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coroutine`` to its end from sync code, even when this thread runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coroutine)
        except BaseException as error:
            box["error"] = error

    worker = threading.Thread(target=target, name="oracle-run-sync")
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


class OracleFactory:
    """Builds oracles for one test and closes them afterwards (the ``oracle_factory`` fixture).

    Each oracle is isolated: only the plugins named are registered (installed entry points
    are not loaded unless asked), ``ORACLE_HOME`` is a temporary folder (so the SQLite store,
    ``oracle.toml`` and plugin settings are the test's own), the operator's ``ORACLE_*``
    environment is ignored, and the model is the scripted test model.

    Args:
        home: the ``ORACLE_HOME`` every oracle of this factory shares.
        model: returns the model an oracle gets when the test does not pass one.
    """

    def __init__(self, home: Path, model: Callable[[], Model | str]) -> None:
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.oracles: list[Oracle] = []
        self._model = model

    def __call__(
        self,
        *plugins: Any,
        entry_points: bool | Sequence[str] = False,
        config: Mapping[str, Mapping[str, Any]] | None = None,
        env: Mapping[str, str] | None = None,
        strict: bool = True,
        **options: Any,
    ) -> Oracle:
        """Build an oracle from ``plugins`` (modules, objects, or dotted module names).

        Args:
            plugins: the plugins to register, in order.
            entry_points: ``True`` also loads every installed ``oracle.plugins`` entry point;
                a list of names loads just those (like ``ORACLE_LOAD_PLUGINS``).
            config: plugin settings, ``{"weather": {"timeout": 5}}``, written to the test's
                ``oracle.toml``.
            env: environment the oracle's settings read instead of ``os.environ``
                (``ORACLE_PLUGIN_<NAME>_<KEY>`` values, ``ORACLE_TIER1_BUDGET``, ...).
            strict: raise when any plugin fails to assemble; ``False`` builds the oracle
                anyway, so the test can inspect ``oracle.registry.failures``.
            options: passed to :class:`~oracle_core.Oracle` (``model``, ``checkpointer``,
                ``instructions``, ``max_steps``, ``settings``, ``path``, ...).

        Raises:
            AssertionError: when ``strict`` and a plugin failed, quoting each failure.
        """
        __tracebackhide__ = True
        if config:
            write_config(self.home, config)
        if "settings" not in options:
            values = {"ORACLE_HOME": str(self.home), **(env or {})}
            if not isinstance(entry_points, bool):
                names = [entry_points] if isinstance(entry_points, str) else entry_points
                values["ORACLE_LOAD_PLUGINS"] = ",".join(names)
            options["settings"] = Settings.from_env(values)
        if "model" not in options:
            options["model"] = self._model()
        oracle = Oracle(
            [import_plugin(p) for p in plugins], entry_points=entry_points is not False, **options
        )
        self.oracles.append(oracle)
        if strict and oracle.registry.failures:
            failures = "\n".join(f"  - {f.plugin}: {f}" for f in oracle.registry.failures)
            raise AssertionError(
                f"{len(oracle.registry.failures)} plugin(s) failed to assemble:\n{failures}\n"
                "(pass strict=False to build the oracle anyway and inspect "
                "oracle.registry.failures)"
            )
        return oracle

    def __repr__(self) -> str:
        return f"<OracleFactory home={str(self.home)!r}, {len(self.oracles)} oracle(s) built>"

    async def aclose(self) -> None:
        """Close every oracle built (shutdown hooks, store); safe to call twice."""
        oracles, self.oracles = self.oracles, []
        for oracle in oracles:
            await oracle.close()

    def close(self) -> None:
        """:meth:`aclose` from sync code."""
        run_sync(self.aclose())
