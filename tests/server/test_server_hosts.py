"""The Host check: without a token only loopback names are answered (DNS rebinding)."""

from __future__ import annotations

import json
import random
import socket
import string
from typing import Any

import pytest
from support import CodePlugin

from oracle_core.server import create_app
from oracle_core.server.hosts import HostPolicy, host_name, parse_allowed_hosts
from oracle_core.testing.openai_server import FakeOpenAI, Reply

LOOPBACK = [
    "localhost", "localhost:8000", "LOCALHOST", "LocalHost:1", "localhost:65535",
    "127.0.0.1", "127.0.0.1:8000", "127.1.2.3", "127.255.255.254:443", "127.0.0.1:0",
    "[::1]", "[::1]:8000", "[0:0:0:0:0:0:0:1]", "[0::1]:80",
]  # fmt: skip

NOT_LOOPBACK = [
    # other names, and names that only start or end like a loopback one
    "attacker.example", "attacker.example:8000", "localhost.attacker.example",
    "localhost.attacker.example:8000", "127.0.0.1.nip.io", "127.0.0.1.nip.io:8000",
    "sub.localhost", "xlocalhost", "localhostx", "locaIhost", "xn--localhost",
    # a trailing dot, bad or extra ports
    "localhost.", "localhost.:8000", "127.0.0.1.", "localhost:", "localhost:abc",
    "localhost:99999", "localhost:123456", "localhost:8000:8000", "localhost:-1", "localhost:+80",
    # other addresses, and spellings of 127.0.0.1 a browser would have normalised
    "0.0.0.0", "10.0.0.1", "128.0.0.1", "126.255.255.255", "127.1", "2130706433",
    "0x7f000001", "0x7f.0.0.1", "127.000.000.001", "[::2]", "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]", "[fe80::1]",
    # IPv6 without brackets, broken brackets
    "::1", "[::1", "::1]", "[::1]x", "[::1]:", "[::1]:http", "[[::1]]", "[]", "[localhost]",
    # spaces, user info, paths, lists, percent-encoding, control and non-ASCII characters
    "", " ", " localhost", "localhost ", "local host", "localhost\t", "user@localhost",
    "localhost@attacker.example", "attacker.example@localhost", "localhost/", "localhost/x",
    "localhost,attacker.example", "localhost%2e", "%6cocalhost", "localhost\x00",
    "localhost\r", "*", "ｌｏｃａｌｈｏｓｔ", "lоcalhost", "localhost\u200b", "127.0.0.1\u3002",
    "[::\u0661]", "\u0661\u0662\u0667.0.0.1",
]  # fmt: skip


async def call(app: Any, hosts: list[bytes], path: str = "/health", body: bytes = b"") -> Any:
    """Send one request straight to the ASGI app, with exactly these Host header values."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    headers = [(b"host", h) for h in hosts] + [(b"content-type", b"application/json")]
    headers.append((b"content-length", str(len(body)).encode()))
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
        "method": "POST" if body else "GET", "scheme": "http", "path": path,
        "raw_path": path.encode(), "query_string": b"", "root_path": "",
        "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000), "headers": headers,
    }  # fmt: skip
    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    data = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], data


def random_loopback(rng: random.Random) -> str:
    """A loopback Host in a random spelling: case, address and port."""
    kind = rng.choice(["name", "v4", "v6"])
    if kind == "name":
        name = "".join(c.upper() if rng.random() < 0.5 else c for c in "localhost")
    elif kind == "v4":
        name = "127." + ".".join(str(rng.randrange(256)) for _ in range(3))
    else:
        name = rng.choice(["[::1]", "[0:0:0:0:0:0:0:1]", "[0::1]", "[::0:1]"])
    return name + (f":{rng.randrange(65536)}" if rng.random() < 0.6 else "")


def random_rebinding(rng: random.Random) -> str:
    """A loopback Host with something added that makes it another name."""
    base = rng.choice(["localhost", "127.0.0.1", "[::1]", "127.8.9.10"])
    junk = "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(5))
    changed = rng.choice(
        [
            f"{base}.{junk}.example",
            f"{junk}.{base}",
            f"{base}{rng.choice('._-@/ ,;%')}{junk}",
            f"{junk}@{base}",
            f"{base}:{rng.randrange(65536, 10**7)}",
            f"{base}:{junk}",
            f"{base}.",
        ]
    )
    return changed


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_hosts_are_loopback_names(host: str) -> None:
    name = host_name(host)
    assert name is not None and HostPolicy().allows(name)


@pytest.mark.parametrize("host", NOT_LOOPBACK)
def test_other_hosts_are_not(host: str) -> None:
    name = host_name(host)
    assert name is None or not HostPolicy().allows(name)


def test_seeded_random_spellings_of_loopback_pass_and_additions_to_it_do_not() -> None:
    rng = random.Random(11)
    policy = HostPolicy()
    for _ in range(2000):
        good, bad = random_loopback(rng), random_rebinding(rng)
        assert policy.refusal([good]) is None, good
        assert policy.refusal([bad]) is not None, bad


@pytest.mark.parametrize("host", NOT_LOOPBACK[::3])
async def test_without_a_token_a_run_sent_with_another_host_is_refused_and_runs_nothing(
    make_oracle, fake_openai: FakeOpenAI, host: str
) -> None:
    plugin = CodePlugin("notes", visibility="always")
    oracle = make_oracle(plugin)
    app = create_app(oracle)
    fake_openai.respond_with(lambda request: Reply.call("notes_tool", {"text": "x"}))
    body = json.dumps({"message": "write a note"}).encode()

    status, data = await call(app, [host.encode()], "/threads/t/runs", body)

    assert status == 421
    error = json.loads(data)["error"]
    assert error["type"] == "host_not_allowed"
    assert "ORACLE_API_TOKEN" in error["message"] and "localhost" in error["message"]
    assert plugin.calls == [] and fake_openai.requests == []
    assert await oracle.checkpointer.threads() == []


@pytest.mark.parametrize("host", LOOPBACK)
async def test_without_a_token_loopback_hosts_are_answered(make_oracle, host: str) -> None:
    app = create_app(make_oracle())

    status, data = await call(app, [host.encode()])

    assert status == 200 and json.loads(data)["status"] == "ok"


@pytest.mark.parametrize(
    "hosts", [[], [b"localhost", b"localhost"], [b"localhost", b"attacker.example"]]
)
async def test_a_request_without_exactly_one_host_header_is_refused(
    make_oracle, hosts: list[bytes]
) -> None:
    status, data = await call(create_app(make_oracle()), hosts)

    assert status == 421
    assert "exactly one" in json.loads(data)["error"]["message"]


@pytest.mark.parametrize("host", [*LOOPBACK[:4], "attacker.example", "oracle.example.com:8443"])
async def test_with_a_token_and_no_list_any_host_is_answered(make_oracle, host: str) -> None:
    app = create_app(make_oracle(), tokens=("s3cret",))

    status, _ = await call(app, [host.encode()])

    assert status == 200


@pytest.mark.parametrize(
    ("host", "answered"),
    [
        ("oracle.example.com", True),
        ("oracle.example.com:443", True),
        ("ORACLE.Example.COM", True),
        ("a.corp.example", True),
        ("a.b.corp.example:8000", True),
        ("10.0.0.5:8000", True),
        ("[::1]", True),
        ("corp.example", False),
        ("evilcorp.example", False),
        ("a.corp.example.evil", False),
        ("oracle.example.com.evil", False),
        ("xoracle.example.com", False),
        ("localhost", False),
        ("127.0.0.1", False),
        ("10.0.0.6", False),
        ("\u212a.corp.example", False),  # the Kelvin sign, which lower() makes a "k"
        ("", False),
    ],
)
async def test_with_a_token_the_allowed_hosts_list_is_the_whole_set(
    make_oracle, host: str, answered: bool
) -> None:
    app = create_app(
        make_oracle(),
        tokens=("s3cret",),
        allowed_hosts="oracle.example.com, *.corp.example,10.0.0.5,[0::1]",
    )

    status, data = await call(app, [host.encode()])

    assert (status == 200) is answered
    if not answered:
        assert status == 421
        assert "ORACLE_ALLOWED_HOSTS" in json.loads(data)["error"]["message"]


def test_an_allowed_hosts_list_without_a_token_is_an_error_naming_what_to_set(
    make_oracle,
) -> None:
    with pytest.raises(ValueError, match=r"ORACLE_ALLOWED_HOSTS .* needs ORACLE_API_TOKEN"):
        create_app(make_oracle(), allowed_hosts="oracle.example.com")


@pytest.mark.parametrize(
    "entry",
    ["oracle.example.com:443", "http://oracle.example.com", "a b", "*.", "*.com", "*oracle.com",
     "[::1]:80", "x/y", "oracle.example.com.", "[nope]", "ex_ample.com"],
)  # fmt: skip
def test_an_allowed_host_that_is_not_a_name_is_refused_naming_it(entry: str) -> None:
    with pytest.raises(ValueError, match="is not a host name") as raised:
        parse_allowed_hosts(f"fine.example,{entry}")

    assert repr(entry.lower()) in str(raised.value)


def test_allowed_hosts_are_read_comma_separated_and_normalised() -> None:
    assert parse_allowed_hosts(" A.Example ,, *.corp.example,[0::1],10.0.0.5,*") == (
        "a.example",
        "*.corp.example",
        "[::1]",
        "10.0.0.5",
        "*",
    )


@pytest.mark.parametrize(
    ("host", "status"),
    [("127.0.0.1", 200), ("localhost", 200), ("attacker.example", 421), ("127.0.0.1.nip.io", 421)],
)
def test_over_real_http_the_host_header_decides(make_oracle, live, host: str, status: int) -> None:
    address = live(create_app(make_oracle()))

    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(f"GET /health HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        reply = sock.recv(65536).decode()

    assert reply.startswith(f"HTTP/1.1 {status} ")
    assert "x-content-type-options: nosniff" in reply.lower()
