"""A credential's value that does not give itself away."""

from __future__ import annotations

import hmac
from typing import Any, NoReturn

MASK = "**********"


class Secret:
    """A string that shows as ``**********`` everywhere but :meth:`reveal`.

    ``repr``, ``str``, f-strings, ``%`` formatting, logging and ``json.dumps(default=str)``
    (how the runtime turns a tool's return value into text) all see the mask, so a tool that
    returns, logs or raises with its credential by mistake leaks nothing; a plain
    ``json.dumps`` refuses it. Pickling is refused. Two secrets compare equal in constant
    time.

    Args:
        value: the credential.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError("a Secret holds a str")
        object.__setattr__(self, "_value", value)

    def reveal(self) -> str:
        """The credential itself: pass it straight to the service that needs it."""
        value: str = object.__getattribute__(self, "_value")
        return value

    def __repr__(self) -> str:
        return f"Secret('{MASK}')"

    def __str__(self) -> str:
        return MASK

    def __format__(self, spec: str) -> str:
        return format(MASK, spec)

    def __bool__(self) -> bool:
        return bool(self.reveal())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self.reveal().encode(), other.reveal().encode())

    def __hash__(self) -> int:
        return hash(Secret)  # says nothing about the value

    def __copy__(self) -> Secret:
        return self  # immutable

    def __deepcopy__(self, memo: dict[int, Any]) -> Secret:
        return self

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError("a Secret cannot be changed")

    def __reduce__(self) -> NoReturn:
        raise TypeError("a Secret cannot be pickled: pass secret.reveal() where it is needed")
