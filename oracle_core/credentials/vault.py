"""Credentials sealed at rest: Fernet (AES-128-CBC + HMAC-SHA256) from ``cryptography``.

The key comes from the operator, ``ORACLE_SECRET_KEY``: one Fernet key, or several separated
by commas for a rotation (the first seals, every one opens; ``oracle connections rotate``
re-seals what is stored with the first). Each sealed value also carries the plugin,
connection and scope it belongs to, and opening checks them, so a sealed value copied to
another row of the store (another user's, another plugin's) does not open there.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from oracle_core.authoring.secrets import Secret
from oracle_core.errors import CredentialUnreadableError, SecretKeyError

if TYPE_CHECKING:
    from cryptography.fernet import MultiFernet

SECRET_KEY_VARIABLE = "ORACLE_SECRET_KEY"
"""The environment variable holding the key(s) credentials are sealed with."""

_HOW = (
    "make one with `oracle connections keygen` and set it, e.g. "
    "`export ORACLE_SECRET_KEY=$(oracle connections keygen)`; keep it out of oracle.toml "
    "and out of version control"
)


# A Fernet key as the Fernet specification writes it: 32 bytes in url-safe base64 with its
# padding, 44 characters. Decided here, not by ``cryptography``: its releases disagree on
# whether a key without the padding is valid (51 accepts 43 characters), and a key that one
# version accepts and the next refuses would lock an operator out of what it sealed.
_KEY_SHAPE = re.compile(r"[A-Za-z0-9_-]{43}=")


def is_valid_key(key: str) -> bool:
    """Whether ``key`` is a Fernet key: 32 bytes in url-safe base64, padded (44 characters)."""
    if not _KEY_SHAPE.fullmatch(key):
        return False
    try:
        return len(base64.urlsafe_b64decode(key)) == 32
    except (binascii.Error, ValueError):
        return False


def generate_key() -> str:
    """A new random key for ``ORACLE_SECRET_KEY`` (a url-safe base64 Fernet key)."""
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode("ascii")


def describe(plugin: str, name: str, scope: str) -> str:
    """How a credential is named in messages: ``connection 'github' of plugin 'gh' (user 'u')``."""
    who = f"user {scope!r}" if scope else "shared"
    return f"connection {name!r} of plugin {plugin!r} ({who})"


class Vault:
    """Seals and opens credentials with the operator's key(s).

    Args:
        keys: Fernet keys, the one to seal with first.

    Raises:
        SecretKeyError: when there is no key or one is not a valid Fernet key (the message
            says which, never what it holds).
    """

    def __init__(self, keys: list[str]) -> None:
        from cryptography.fernet import Fernet, MultiFernet

        if not keys:
            raise SecretKeyError(f"{SECRET_KEY_VARIABLE} is not set: {_HOW}")
        fernets = []
        for index, key in enumerate(keys, 1):
            if not is_valid_key(key):
                which = f"key {index} of {len(keys)} in " if len(keys) > 1 else ""
                raise SecretKeyError(
                    f"{which}{SECRET_KEY_VARIABLE} is not a valid key (it must be 32 bytes in "
                    f"url-safe base64, 44 characters): {_HOW}"
                )
            fernets.append(Fernet(key.encode("ascii")))
        self._fernet: MultiFernet = MultiFernet(fernets)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Vault:
        """The vault for ``ORACLE_SECRET_KEY`` in ``env``.

        Raises:
            SecretKeyError: when the variable is unset, empty, or holds an invalid key.
        """
        raw = env.get(SECRET_KEY_VARIABLE) or ""
        return cls([part.strip() for part in raw.split(",") if part.strip()])

    def __repr__(self) -> str:
        return "<Vault>"

    def seal(self, plugin: str, name: str, scope: str, value: str) -> str:
        """``value`` encrypted for this plugin, connection and scope (ASCII text)."""
        plain = json.dumps(
            {"plugin": plugin, "name": name, "scope": scope, "value": value}, ensure_ascii=False
        )
        return self._fernet.encrypt(plain.encode("utf-8")).decode("ascii")

    def open(self, plugin: str, name: str, scope: str, sealed: str) -> Secret:
        """The credential ``sealed`` holds, checked to belong to this plugin, name and scope.

        Raises:
            CredentialUnreadableError: when no key opens it, it was altered, or it was
                sealed for another connection or user.
        """
        from cryptography.fernet import InvalidToken

        what = describe(plugin, name, scope)
        try:
            plain = json.loads(self._fernet.decrypt(sealed.encode("ascii")))
        except (InvalidToken, ValueError, UnicodeError):
            raise CredentialUnreadableError(
                f"the stored {what} cannot be decrypted: {SECRET_KEY_VARIABLE} is not the key "
                "it was sealed with, or the stored value was altered; restore the key (an old "
                "key may follow the new one after a comma), or set the credential again with "
                f"`oracle connections set {plugin} {name}`"
            ) from None
        expected = {"plugin": plugin, "name": name, "scope": scope}
        if (
            not isinstance(plain, dict)
            or {k: plain.get(k) for k in expected} != expected
            or not isinstance(plain.get("value"), str)
        ):
            raise CredentialUnreadableError(
                f"the stored {what} was sealed for another connection or user (the store was "
                f"altered): set it again with `oracle connections set {plugin} {name}`"
            )
        return Secret(plain["value"])

    def rotate(self, sealed: str) -> str:
        """``sealed`` sealed again with the first key (opened with any of them).

        Raises:
            CredentialUnreadableError: when no key opens it.
        """
        from cryptography.fernet import InvalidToken

        try:
            return self._fernet.rotate(sealed.encode("ascii")).decode("ascii")
        except (InvalidToken, UnicodeError):
            raise CredentialUnreadableError(
                f"a stored credential cannot be decrypted with any key in {SECRET_KEY_VARIABLE}"
            ) from None
