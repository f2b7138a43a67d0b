"""Seeded user ids and thread ids, good and bad, for the tests of the one id rule
(``oracle_core.values.ids``): each bad one with the reason it must be refused."""

from __future__ import annotations

import random

LONE = ("\ud800", "\udbff", "\ud83d", "\udc00", "\ude00", "\udfff")
CONTROLS = (
    "\x00",
    "\x01",
    "\x08",
    "\t",
    "\n",
    "\r",
    "\x1b",
    "\x1f",
    "\x7f",
    "\x80",
    "\x85",
    "\x9f",
)
GOOD_PIECES = ("alice", "Bob", " ", "é", "日本", "😀", "user@example.com", "-", "_", "'", '"', "\\")


def good_user(rng: random.Random) -> str:
    """A user id the rule takes: 1 to 200 printable characters (not only spaces), pairs
    as characters."""
    text = "".join(rng.choice(GOOD_PIECES) for _ in range(rng.randint(1, 12)))
    text = text[: rng.choice((1, 20, 200))]
    return text if text.strip() else "u" + text


def bad_user(rng: random.Random) -> tuple[str, str]:
    """A user id the rule refuses, and why: ``surrogate``, ``control``, ``length`` or
    ``spaces``."""
    why = rng.choice(("surrogate", "control", "length", "spaces"))
    base = good_user(rng)[:150]
    if why == "spaces":
        return " " * rng.randint(1, 200), why
    if why == "length":
        return base + "x" * rng.choice((201 - len(base), 500, 10_000)), why
    bad = rng.choice(LONE if why == "surrogate" else CONTROLS)
    at = rng.randint(0, len(base))
    return base[:at] + bad + base[at:], why


def bad_thread(rng: random.Random) -> str:
    """A thread id the rule refuses: a lone surrogate, a control, a space, a slash, too long
    or a leading punctuation mark."""
    kind = rng.choice(("surrogate", "control", "space", "slash", "long", "lead"))
    base = f"t{rng.randint(0, 10**6)}"
    if kind == "long":
        return base + "x" * rng.randint(128, 2000)
    if kind == "lead":
        return rng.choice("._:@-") + base
    piece = {"surrogate": rng.choice(LONE), "control": rng.choice(CONTROLS)}.get(
        kind, " " if kind == "space" else "/"
    )
    return base + piece + base
