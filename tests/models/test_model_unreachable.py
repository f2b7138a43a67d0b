"""A model server that does not answer is named: its URL, the setting that points at it, and
what went wrong, alike on the direct path and through litellm.

Each kind of dead server is real, on 127.0.0.1: a port nothing listens on, one that accepts
and hangs up, one that resets the connection, and one that accepts and never answers.
"""

from __future__ import annotations

import dataclasses
import re
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from oracle_core import ModelError, ModelRequest, ModelResponse
from oracle_core.models.completions import ProviderModel
from oracle_core.models.litellm import LiteLLMModel
from oracle_core.models.openai import OpenAIModel
from oracle_core.models.retries import spent_on
from oracle_core.models.unreachable import ModelUnreachableError, scrub
from oracle_core.values.messages import Usage

MODEL = "openai/fake-model"
REQUEST = ModelRequest(
    "t", "r", 1, MODEL, "Be terse.", ({"role": "user", "content": "hi"},), (), {}
)


class DeadServer:
    """A listening socket on 127.0.0.1 that treats each connection as ``behave`` says."""

    def __init__(self, behave: Callable[[socket.socket], None]) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.held: list[socket.socket] = []
        self.behave = behave
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.held.append(connection)
            self.behave(connection)

    def close(self) -> None:
        self.listener.close()
        for connection in self.held:
            connection.close()
        self.thread.join(timeout=5)


def _hang_up(connection: socket.socket) -> None:
    connection.close()


def _reset(connection: socket.socket) -> None:
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()


def _say_nothing(connection: socket.socket) -> None:
    """Keep the connection open and never answer (held until the test ends)."""


def closed_port_url() -> str:
    probe = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    probe.close()
    return url


# kind -> (how the server treats a connection; None: nothing listens), what the message says
KINDS: dict[str, tuple[Callable[[socket.socket], None] | None, str]] = {
    "nothing listens": (None, "cannot connect to the model server at {url} (connection refused"),
    "hangs up": (_hang_up, "cannot connect to the model server at {url} ("),
    "resets": (_reset, "cannot connect to the model server at {url} ("),
    "never answers": (_say_nothing, "the model server at {url} did not answer within 0.5 s"),
}


@pytest.fixture(params=list(KINDS))
def dead(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """A model server URL that does not answer, and the start of what the error must say."""
    behave, says = KINDS[request.param]
    if behave is None:
        url = closed_port_url()
        yield url, says.format(url=url)
        return
    server = DeadServer(behave)
    yield server.url, says.format(url=server.url)
    server.close()


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ProviderModel, "retry_delay", 0.001)


async def failure(model: ProviderModel, stream: bool) -> ModelError:
    request = dataclasses.replace(REQUEST, model=model.name)
    with pytest.raises(ModelError) as caught:
        if stream:
            pieces: list[Any] = [piece async for piece in model.stream(request)]
            assert isinstance(pieces[-1], ModelResponse)
        else:
            await model.complete(request)
    return caught.value


CLIENTS: dict[str, type[ProviderModel]] = {"direct": OpenAIModel, "litellm": LiteLLMModel}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("client", list(CLIENTS))
async def test_a_server_that_does_not_answer_is_named_with_its_url_and_setting(
    dead: tuple[str, str], client: str, stream: bool
) -> None:
    url, says = dead
    model = CLIENTS[client](MODEL, api_base=url, api_key="sk-fake", num_retries=1, timeout=0.5)

    error = await failure(model, stream)

    message = str(error)
    assert isinstance(error, ModelUnreachableError)
    assert message.startswith(f"model call to '{MODEL}' failed: {says}"), message
    assert "that URL is ORACLE_API_BASE (or --api-base)" in message
    assert "HTTP" not in message  # no server sent a status; litellm's 500 was its own
    assert " object at 0x" not in message
    assert "\n" not in message
    assert (error.url, error.setting) == (url, "ORACLE_API_BASE (or --api-base)")


@pytest.mark.parametrize("client", list(CLIENTS))
async def test_a_connection_that_never_opened_counts_no_tokens(client: str) -> None:
    model = CLIENTS[client](MODEL, api_base=closed_port_url(), api_key="sk-fake", num_retries=2)

    error = await failure(model, stream=False)

    # Before, litellm's 500 for a refused connection counted the prompt of every attempt
    # as an estimate (oracle logs showed 1,860 tokens for a run that never connected).
    assert spent_on(error) == Usage()


@pytest.mark.oracle_allow_model_requests  # the URL is 127.0.0.1, from the variable
async def test_without_an_api_base_the_providers_own_variable_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = closed_port_url().removesuffix("/v1")
    monkeypatch.setenv("OLLAMA_API_BASE", url)
    model = LiteLLMModel("ollama/llama3", num_retries=0)

    message = str(await failure(model, stream=False))

    assert f"cannot connect to the model server at {url} (connection refused" in message
    assert "that URL is OLLAMA_API_BASE: check that a server runs there, or point " in message
    assert "ORACLE_API_BASE (or --api-base) at one that does" in message


@pytest.mark.oracle_allow_model_requests  # the URL is 127.0.0.1, from the variable
@pytest.mark.parametrize("variable", ["OPENAI_BASE_URL", "OPENAI_API_BASE"])
async def test_the_direct_path_names_the_openai_variable_it_read(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    url = closed_port_url()
    monkeypatch.setenv(variable, url)
    model = OpenAIModel(MODEL, api_key="sk-fake", num_retries=0)

    message = str(await failure(model, stream=False))

    assert f"at {url} (connection refused" in message
    assert f"that URL is {variable}:" in message


@pytest.mark.parametrize(
    "text",
    [
        "Cannot connect to host h:1 ssl:<ssl.SSLContext object at 0x7f49f631c5f0> [refused]",
        "Cannot connect to host h:1 ssl:default [refused] <Foo.Bar object at 0xDEADbeef>",
        "<socket.socket object at 0x1> closed",
    ],
)
def test_object_reprs_are_scrubbed_from_what_a_person_reads(text: str) -> None:
    assert not re.search(r"object at 0x", scrub(text))
    assert scrub(text).startswith(text.split(" ssl:")[0].split("<")[0])
