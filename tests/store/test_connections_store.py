"""Credentials at rest: sealed in every store, opened only with the right key, never shown."""

from __future__ import annotations

import base64
import json
import logging
import pickle
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from stores import Clock

from oracle_core import (
    Connection,
    CredentialUnreadableError,
    InvalidCredentialError,
    Secret,
    SecretKeyError,
)
from oracle_core.credentials.sealed import Credentials
from oracle_core.credentials.vault import SECRET_KEY_VARIABLE, Vault, generate_key
from oracle_core.store import Checkpointer, SQLiteCheckpointer

VALUE = "sk-live-7f3a9c1e5b2d4f6a8c0e"
TOKEN = Connection(name="token")
SHARED = Connection(name="org", per_user=False)


@pytest.fixture
def key() -> str:
    return generate_key()


def credentials(store: Checkpointer, *keys: str) -> Credentials:
    return Credentials(store, {SECRET_KEY_VARIABLE: ",".join(keys)})


def database_bytes(folder: Path) -> bytes:
    """Every byte of the SQLite database (its WAL and shared memory too)."""
    return b"".join(p.read_bytes() for p in folder.iterdir() if p.name.startswith("oracle.db"))


# -- the store methods ---------------------------------------------------------------------------


async def test_a_saved_credential_is_seen_by_another_opening_of_the_store(
    connect: Callable[[], Checkpointer], clock: Clock
) -> None:
    await connect().save_credential("gh", "token", "alice", "sealed-1")

    record = await connect().load_credential("gh", "token", "alice")

    assert record is not None
    assert (record.plugin, record.name, record.user_id, record.sealed) == (
        "gh",
        "token",
        "alice",
        "sealed-1",
    )
    assert record.created_at == record.updated_at == clock.now


async def test_saving_again_replaces_the_value_and_keeps_when_it_was_first_set(
    connect: Callable[[], Checkpointer], clock: Clock
) -> None:
    store = connect()
    await store.save_credential("gh", "token", "alice", "old")
    clock.now += 60
    await store.save_credential("gh", "token", "alice", "new")

    record = await connect().load_credential("gh", "token", "alice")

    assert record is not None
    assert record.sealed == "new"
    assert (record.created_at, record.updated_at) == (clock.now - 60, clock.now)


async def test_credentials_are_keyed_by_plugin_name_and_user(
    connect: Callable[[], Checkpointer],
) -> None:
    store = connect()
    await store.save_credential("gh", "token", "alice", "a")

    assert await store.load_credential("gh", "token", "bob") is None
    assert await store.load_credential("gh", "other", "alice") is None
    assert await store.load_credential("gl", "token", "alice") is None
    assert await store.load_credential("gh", "token", "") is None


async def test_a_listing_never_carries_values_and_is_ordered_and_narrowed(
    connect: Callable[[], Checkpointer],
) -> None:
    store = connect()
    for plugin, name, user in [("gl", "t", "bob"), ("gh", "t", "bob"), ("gh", "t", ""),
                               ("gh", "a", "alice")]:  # fmt: skip
        await store.save_credential(plugin, name, user, f"sealed-{plugin}-{name}-{user}")

    listed = await connect().credentials()

    assert [(r.plugin, r.name, r.user_id) for r in listed] == [
        ("gh", "a", "alice"),
        ("gh", "t", ""),
        ("gh", "t", "bob"),
        ("gl", "t", "bob"),
    ]
    assert {r.sealed for r in listed} == {""}
    assert [r.plugin for r in await store.credentials(plugin="gl")] == ["gl"]
    assert [r.user_id for r in await store.credentials(user_id="bob")] == ["bob", "bob"]


async def test_delete_removes_one_credential_and_says_whether_there_was_one(
    connect: Callable[[], Checkpointer],
) -> None:
    store = connect()
    await store.save_credential("gh", "token", "alice", "a")
    await store.save_credential("gh", "token", "bob", "b")

    assert await store.delete_credential("gh", "token", "alice") is True
    assert await store.delete_credential("gh", "token", "alice") is False
    assert [r.user_id for r in await connect().credentials()] == ["bob"]


# -- sealing -------------------------------------------------------------------------------------


async def test_a_value_is_stored_sealed_and_opens_for_its_owner_only(
    connect: Callable[[], Checkpointer], key: str
) -> None:
    store = connect()
    vault = credentials(store, key)
    await vault.set("gh", TOKEN, VALUE, "alice")

    record = await connect().load_credential("gh", "token", "alice")

    assert record is not None and VALUE not in record.sealed
    assert (await credentials(connect(), key).get("gh", TOKEN, "alice")) == Secret(VALUE)
    assert await credentials(connect(), key).get("gh", TOKEN, "bob") is None


async def test_a_shared_connection_is_one_credential_for_every_user(
    connect: Callable[[], Checkpointer], key: str
) -> None:
    vault = credentials(connect(), key)
    await vault.set("gh", SHARED, VALUE, "alice")

    for user in ("alice", "bob", "default"):
        assert await vault.get("gh", SHARED, user) == Secret(VALUE)
    assert [r.user_id for r in await connect().credentials()] == [""]


async def test_the_sqlite_file_never_holds_the_value(tmp_path: Path, key: str) -> None:
    store = SQLiteCheckpointer(tmp_path / "oracle.db")
    await credentials(store, key).set("gh", TOKEN, VALUE, "alice")
    await store.close()

    data = database_bytes(tmp_path)

    assert b"oracle_credentials" in data
    assert VALUE.encode() not in data
    assert VALUE[-12:].encode() not in data


async def test_a_wrong_key_is_a_clear_error_naming_the_variable(
    connect: Callable[[], Checkpointer], key: str
) -> None:
    await credentials(connect(), key).set("gh", TOKEN, VALUE, "alice")

    with pytest.raises(CredentialUnreadableError) as raised:
        await credentials(connect(), generate_key()).get("gh", TOKEN, "alice")

    message = str(raised.value)
    assert "connection 'token' of plugin 'gh' (user 'alice') cannot be decrypted" in message
    assert SECRET_KEY_VARIABLE in message
    assert "oracle connections set gh token" in message
    assert VALUE not in message


@pytest.mark.parametrize("position", [0, 10, 40, -20, -1])
async def test_a_tampered_sealed_value_does_not_open(
    connect: Callable[[], Checkpointer], key: str, position: int
) -> None:
    store = connect()
    await credentials(store, key).set("gh", TOKEN, VALUE, "alice")
    record = await store.load_credential("gh", "token", "alice")
    assert record is not None
    sealed = list(record.sealed)
    sealed[position] = "A" if sealed[position] != "A" else "B"
    await store.save_credential("gh", "token", "alice", "".join(sealed))

    with pytest.raises(CredentialUnreadableError, match="altered"):
        await credentials(connect(), key).get("gh", TOKEN, "alice")


async def test_a_value_moved_to_another_users_row_does_not_open_there(
    connect: Callable[[], Checkpointer], key: str
) -> None:
    store = connect()
    await credentials(store, key).set("gh", TOKEN, VALUE, "alice")
    record = await store.load_credential("gh", "token", "alice")
    assert record is not None
    await store.save_credential("gh", "token", "mallory", record.sealed)
    await store.save_credential("gh", "other", "alice", record.sealed)

    vault = credentials(connect(), key)
    with pytest.raises(CredentialUnreadableError, match="sealed for another connection or user"):
        await vault.get("gh", TOKEN, "mallory")
    with pytest.raises(CredentialUnreadableError, match="sealed for another connection or user"):
        await vault.get("gh", Connection(name="other"), "alice")


@pytest.mark.parametrize(
    "value",
    # A fixed valid key (test ids must be the same in every xdist worker) before a bad one.
    ["", "   ", "short", "x" * 43, "x" * 45, "!" * 44, "é" * 44, f"{'A' * 43}=,nope"],
)
def test_a_missing_or_invalid_key_says_which_variable_and_how_to_make_one(value: str) -> None:
    with pytest.raises(SecretKeyError) as raised:
        Vault.from_env({SECRET_KEY_VARIABLE: value} if value else {})

    message = str(raised.value)
    assert SECRET_KEY_VARIABLE in message
    assert "oracle connections keygen" in message
    if value.strip():
        assert value.split(",")[-1] not in message  # the key itself is never shown


def _key_variants(seed: int) -> tuple[list[str], list[str]]:
    """Seeded well-formed keys, and near misses of each: unpadded, too long or short, the
    standard alphabet's ``+`` and ``/``, a stray character (what no version may accept)."""
    rng = random.Random(seed)
    good, bad = [], []
    for _ in range(50):
        key = base64.urlsafe_b64encode(rng.randbytes(32)).decode("ascii")
        good.append(key)
        spot = rng.randrange(43)
        bad += [
            key.rstrip("="),
            key + "=",
            key[:-2] + "=",
            base64.urlsafe_b64encode(rng.randbytes(rng.choice([16, 24, 31, 33, 48]))).decode(),
            key[:spot] + rng.choice("+/ .é\x00") + key[spot + 1 :],
        ]
    return good, bad


@pytest.mark.parametrize("seed", range(4))
def test_a_key_is_valid_exactly_when_it_is_32_bytes_of_padded_url_safe_base64(seed: int) -> None:
    good, bad = _key_variants(seed)

    for key in good:
        vault = Vault([key])
        assert vault.open("p", "n", "", vault.seal("p", "n", "", "v")).reveal() == "v"
    for key in bad:
        with pytest.raises(SecretKeyError, match="not a valid key"):
            Vault([key])


async def test_nothing_is_stored_when_the_key_is_missing(
    connect: Callable[[], Checkpointer],
) -> None:
    store = connect()
    with pytest.raises(SecretKeyError):
        await Credentials(store, {}).set("gh", TOKEN, VALUE, "alice")

    assert await store.credentials() == []


async def test_an_old_key_after_the_new_one_opens_and_rotation_reseals(
    connect: Callable[[], Checkpointer], key: str
) -> None:
    new = generate_key()
    await credentials(connect(), key).set("gh", TOKEN, VALUE, "alice")

    both = credentials(connect(), new, key)
    assert await both.get("gh", TOKEN, "alice") == Secret(VALUE)
    assert await both.rotate() == 1

    assert await credentials(connect(), new).get("gh", TOKEN, "alice") == Secret(VALUE)
    with pytest.raises(CredentialUnreadableError):
        await credentials(connect(), key).get("gh", TOKEN, "alice")


# -- values and users ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["", "  ", "line one\nline two", "tab\there", "nul\x00", "x" * 16_385, "del\x7f"],
)
async def test_a_bad_value_is_refused_without_showing_it(
    connect: Callable[[], Checkpointer], key: str, value: str
) -> None:
    store = connect()
    with pytest.raises(InvalidCredentialError) as raised:
        await credentials(store, key).set("gh", TOKEN, value, "alice")

    assert "connection 'token' of plugin 'gh'" in str(raised.value)
    if value.strip():
        assert value not in str(raised.value)
    assert await store.credentials() == []


@pytest.mark.parametrize("user", ["", " ", "a\nb", "\x00", "u" * 201])
async def test_a_per_user_credential_needs_a_valid_user_id(
    connect: Callable[[], Checkpointer], key: str, user: str
) -> None:
    with pytest.raises(InvalidCredentialError, match="user id"):
        await credentials(connect(), key).set("gh", TOKEN, VALUE, user)


# -- Secret --------------------------------------------------------------------------------------


def test_a_secret_shows_only_a_mask(caplog: pytest.LogCaptureFixture) -> None:
    secret = Secret(VALUE)
    caplog.set_level(logging.DEBUG)
    logging.getLogger("test").debug("got %s %r", secret, secret)

    shown = [repr(secret), str(secret), f"{secret}", f"{secret!r}", "%s" % secret,  # noqa: UP031
             json.dumps({"k": secret}, default=str), caplog.text]  # fmt: skip
    assert not any(VALUE in text for text in shown)
    assert secret.reveal() == VALUE


def test_a_secret_cannot_be_pickled_or_changed() -> None:
    secret = Secret(VALUE)

    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(secret)
    with pytest.raises(AttributeError):
        secret._value = "other"  # type: ignore[misc]
    assert secret == Secret(VALUE) and secret != Secret("other")
