"""Bearer tokens, body and message limits, and bad request bodies: each a clear 4xx."""

from __future__ import annotations

import pytest

from oracle_core.server import Limits, is_loopback, parse_tokens
from oracle_core.testing.openai_server import FakeOpenAI, Reply


async def test_api_requests_without_a_token_are_refused_with_401(serve) -> None:
    served = await serve(tokens=("s3cret",))

    response = await served.client.get("/threads")

    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error"]["message"] == (
        "missing bearer token: send the header Authorization: Bearer <token>"
    )


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("Bearer wrong", "invalid bearer token"),
        ("Basic czNjcmV0", "the Authorization header must be: Bearer <token>"),
        ("Bearer ", "the Authorization header must be: Bearer <token>"),
    ],
)
async def test_a_wrong_token_or_scheme_is_refused_with_401(
    serve, header: str, message: str
) -> None:
    served = await serve(tokens=("s3cret",))

    response = await served.client.post(
        "/threads/t/runs", json={"message": "hi"}, headers={"Authorization": header}
    )

    assert response.status_code == 401
    assert response.json()["error"]["message"] == message


async def test_any_of_several_tokens_is_accepted(serve, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("Hi."))
    served = await serve(tokens=parse_tokens("first, second ,"))

    listed = await served.client.get("/threads", headers={"Authorization": "Bearer first"})
    run = await served.client.post(
        "/threads/t/runs", json={"message": "hi"}, headers={"Authorization": "Bearer second"}
    )

    assert listed.status_code == 200
    assert run.json()["answer"] == "Hi."


async def test_health_needs_no_token(serve) -> None:
    served = await serve(tokens=("s3cret",))

    assert (await served.client.get("/health")).status_code == 200


def test_tokens_are_comma_separated_and_loopback_hosts_are_recognised() -> None:
    assert parse_tokens(" a,b ,,c ") == ("a", "b", "c")
    assert parse_tokens(None) == ()
    assert [is_loopback(h) for h in ("127.0.0.1", "::1", "localhost", "127.0.0.2")] == [True] * 4
    assert [is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.4", "example.com")] == [False] * 4


async def test_a_body_over_the_limit_is_refused_with_413(serve) -> None:
    served = await serve(limits=Limits(max_body_bytes=1000))

    response = await served.client.post("/threads/t/runs", json={"message": "x" * 2000})

    assert response.status_code == 413
    assert response.json()["error"] == {
        "type": "body_too_large",
        "message": "the request body is 2014 bytes; this server accepts at most 1000 bytes",
    }


async def test_a_chunked_body_over_the_limit_is_refused_with_413(serve) -> None:
    served = await serve(limits=Limits(max_body_bytes=1000))

    async def chunks():
        yield b'{"message": "'
        for _ in range(20):
            yield b"x" * 100
        yield b'"}'

    response = await served.client.post(
        "/threads/t/runs", content=chunks(), headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 413
    assert response.json()["error"]["type"] == "body_too_large"


async def test_a_chunked_body_under_the_limit_is_served(serve, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(Reply.text("Fine."))
    served = await serve(limits=Limits(max_body_bytes=1000))

    async def chunks():
        yield b'{"message": '
        yield b'"hello"}'

    response = await served.client.post(
        "/threads/t/runs", content=chunks(), headers={"Content-Type": "application/json"}
    )

    assert response.json()["answer"] == "Fine."


async def test_a_message_over_the_limit_is_refused_with_422_naming_the_limit(
    serve, fake_openai: FakeOpenAI
) -> None:
    served = await serve(limits=Limits(max_message_chars=100))

    response = await served.client.post("/threads/t/runs", json={"message": "x" * 101})

    assert response.status_code == 422
    assert response.json()["error"] == {
        "type": "message_too_long",
        "message": "the message is 101 characters; this server accepts at most 100",
    }
    assert fake_openai.requests == []


async def test_a_body_that_is_not_json_is_refused_with_400(serve) -> None:
    served = await serve()

    response = await served.client.post(
        "/threads/t/runs", content=b'{"message": "hi"', headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_json"
    assert error["message"].startswith("the request body is not valid JSON (")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "message: Field required"),
        ({"message": ""}, "message: String should have at least 1 character"),
        ({"message": 3}, "message: Input should be a valid string"),
        ({"message": "hi", "mesage": "typo"}, "mesage: Extra inputs are not permitted"),
        ([1, 2], "the body must be a JSON object sent with Content-Type: application/json"),
    ],
)
async def test_a_body_of_the_wrong_shape_is_refused_with_422_naming_the_field(
    serve, body: object, message: str
) -> None:
    served = await serve()

    response = await served.client.post("/threads/t/runs", json=body)

    assert response.status_code == 422
    assert response.json()["error"] == {"type": "invalid_request", "message": message}


async def test_a_missing_body_is_refused_with_422(serve) -> None:
    served = await serve()

    response = await served.client.post("/threads/t/runs")

    assert response.status_code == 422
    assert response.json()["error"]["message"] == (
        "the request needs a JSON body sent with Content-Type: application/json"
    )


@pytest.mark.parametrize(
    ("path", "message", "error"),
    [
        pytest.param("/threads/t/runs", "   ", "empty_message", id="a blank message"),
        pytest.param(
            "/threads/%20hi%3Cscript%3E/runs",
            "hi",
            "invalid_thread_id",
            id="a thread id with odd characters",
        ),
    ],
)
async def test_a_run_request_the_server_cannot_take_is_refused_with_422(
    serve, path: str, message: str, error: str
) -> None:
    served = await serve()

    response = await served.client.post(path, json={"message": message})

    assert response.status_code == 422
    assert response.json()["error"]["type"] == error


async def test_an_unknown_path_is_a_404_in_the_error_shape(serve) -> None:
    served = await serve()

    response = await served.client.get("/nowhere")

    assert response.status_code == 404
    assert response.json()["error"]["message"] == "no route GET /nowhere; see /docs for the API"


async def test_a_wrong_method_is_a_405_naming_the_allowed_ones(serve) -> None:
    served = await serve()

    response = await served.client.delete("/threads/t/runs")

    assert response.status_code == 405
    assert (
        response.json()["error"]["message"]
        == "DELETE is not allowed on /threads/t/runs; allowed: POST"
    )
