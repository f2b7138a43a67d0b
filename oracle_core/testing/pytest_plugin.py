"""The oracle-core pytest plugin, registered through the ``pytest11`` entry point.

Installing oracle-core is enough to get, in any project:

- ``oracle_model``: an in-process :class:`~oracle_core.testing.ScriptedModel` for the test;
- ``oracle_http_model``: an :class:`~oracle_core.testing.HTTPScriptedModel`, the same
  scripting reached through litellm over loopback HTTP;
- ``oracle_factory``: builds isolated oracles (:class:`~oracle_core.testing.OracleFactory`)
  and closes them when the test ends;
- ``oracle_refuse_model_requests``: the guard that refuses real model requests. Every test
  that uses one of the fixtures above gets it; a project puts it on all its tests with the
  ini option ``usefixtures = oracle_refuse_model_requests``. A test opts out with
  ``@pytest.mark.oracle_allow_model_requests``, a project with the ini option
  ``oracle_allow_model_requests = true``, a run with ``ORACLE_ALLOW_MODEL_REQUESTS=1``.

pytest imports this module in every project where oracle-core is installed, so it imports
nothing from the harness (and never litellm) until a test uses it; a test that never uses
the harness pays nothing for it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from oracle_core.models.base import Model
    from oracle_core.testing.harness import OracleFactory
    from oracle_core.testing.scripted import ScriptedModel
    from oracle_core.testing.scripted_http import HTTPScriptedModel

ALLOW_MODEL_REQUESTS = "oracle_allow_model_requests"
"""The marker and ini option that let tests call real models."""

ALLOW_MODEL_REQUESTS_ENV = "ORACLE_ALLOW_MODEL_REQUESTS"
"""The environment variable that lets a whole test run call real models."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``oracle_allow_model_requests`` ini option."""
    parser.addini(
        ALLOW_MODEL_REQUESTS,
        "let every test call real models (oracle-core refuses non-loopback model requests "
        "by default)",
        type="bool",
        default=False,
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``oracle_allow_model_requests`` marker (so ``--strict-markers`` works)."""
    config.addinivalue_line(
        "markers",
        f"{ALLOW_MODEL_REQUESTS}: let this test call real models through oracle-core "
        "(refused by default)",
    )


def _allowed(request: pytest.FixtureRequest) -> bool:
    if request.node.get_closest_marker(ALLOW_MODEL_REQUESTS) is not None:
        return True
    if request.config.getini(ALLOW_MODEL_REQUESTS):
        return True
    return os.environ.get(ALLOW_MODEL_REQUESTS_ENV, "").strip().lower() in (
        "1",
        "true",
        "yes",
        "on",
    )


@pytest.fixture
def oracle_refuse_model_requests(request: pytest.FixtureRequest) -> Iterator[None]:
    """Refuse real model requests (anything but 127.0.0.1) unless the test opted in.

    ``oracle_model``, ``oracle_http_model`` and ``oracle_factory`` use it. A run swallows
    the refusal as a failed run, so the test also fails at teardown, naming the model.
    """
    if _allowed(request):
        yield
        return
    from oracle_core.testing.guard import refuse_model_requests

    with refuse_model_requests() as refused:
        yield
    if refused:
        pytest.fail(f"{request.node.name} tried to call a real model: {refused[0]}", pytrace=False)


@pytest.fixture
def oracle_model(oracle_refuse_model_requests: None) -> Iterator[ScriptedModel]:
    """A scripted model that answers in the test process (no litellm, no HTTP).

    Queue what it answers (``reply_text``, ``reply_tool_call``, ``reply_tool_calls``,
    ``reply_error``, ``reply_with``), then inspect ``requests`` / ``request(step)``.
    """
    from oracle_core.testing.scripted import ScriptedModel

    with ScriptedModel() as model:
        yield model


@pytest.fixture
def oracle_http_model(oracle_refuse_model_requests: None) -> Iterator[HTTPScriptedModel]:
    """A scripted model reached through litellm over loopback HTTP, like a real provider.

    Scripted and inspected like ``oracle_model``; ``oracle_factory`` uses it instead of
    ``oracle_model`` in a test that asks for it.
    """
    from oracle_core.testing.scripted_http import HTTPScriptedModel

    with HTTPScriptedModel() as model:
        yield model


@pytest.fixture
def oracle_factory(
    request: pytest.FixtureRequest, tmp_path: Path, oracle_refuse_model_requests: None
) -> Iterator[OracleFactory]:
    """Build isolated oracles from exactly the plugins named; each is closed after the test.

    ``oracle_factory(my_plugin, config={...}, env={...}, entry_points=False, **options)``:
    the oracle's ``ORACLE_HOME`` is a temporary folder, its model is ``oracle_model`` (or
    ``oracle_http_model`` when the test uses that fixture) unless ``model=`` is given, and
    installed plugins are loaded only with ``entry_points=``.
    """
    from oracle_core.testing.harness import OracleFactory

    def model() -> Model:
        # Decided per oracle: a test may ask for oracle_http_model after the factory.
        http = "oracle_http_model" in request.fixturenames
        scripted: Model = request.getfixturevalue("oracle_http_model" if http else "oracle_model")
        return scripted

    factory = OracleFactory(tmp_path / "oracle-home", model)
    yield factory
    factory.close()
