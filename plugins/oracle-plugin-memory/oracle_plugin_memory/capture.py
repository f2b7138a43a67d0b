"""Finding the durable facts a user states, without asking a model.

A small rule set, applied to each sentence of the user's message (see the README):

1. **remember**: "remember (that) X", "please remember X", "don't forget (that) X",
   "keep in mind (that) X", "note that X" -> X.
2. **preference**: "I prefer / like / love / hate / don't like / always / never / usually X".
3. **about me**: "I am / I'm allergic to / vegetarian / vegan / from X", "I live in X",
   "I work at / for / as X", "I was born in X".
4. **my X is Y**: "my X is Y" / "my X are Y"; a later "my X is Z" replaces it (the key is X).
5. **call me**: "call me X" (the key is ``name``).

A rule matches only at the start of a sentence (after "please", "also", "btw", "oh" and the
like), so "if my password is ..." or "what if I prefer ..." never do. Questions are never
facts. Nothing that looks like a secret (password, PIN, card number, API key, token, ...)
is kept. Only the first :data:`MAX_SCANNED` characters of a message are read, a fact
longer than :data:`MAX_FACT` characters is dropped (not cut: a cut changes its meaning),
and at most :data:`MAX_FACTS` are kept per message. What is kept is data: it is recalled
fenced, as something the user said, never as an instruction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_SCANNED = 8000
"""Characters of a message the rules read."""

MAX_FACT = 300
"""Characters a captured fact may have."""

MAX_FACTS = 5
"""Facts kept from one message."""

_LEAD = r"(?:(?:please|also|and|oh|btw|by the way|ok|okay|so|just|hey|hi|well|fyi)[,!\s]+)*"

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "remember",
        re.compile(
            rf"^{_LEAD}(?:(?:can|could|would|will) you (?:please )?)?"
            r"(?:remember|don'?t forget|do not forget|keep in mind|note)(?: that)?[,:]?\s+"
            r"(?P<fact>.+)$",
            re.IGNORECASE,
        ),
    ),
    (
        "preference",
        re.compile(
            rf"^{_LEAD}(?P<fact>i (?:really )?(?:prefer|like|love|hate|dislike|don'?t like|"
            r"do not like|always|never|usually)\b.+)$",
            re.IGNORECASE,
        ),
    ),
    (
        "about me",
        re.compile(
            rf"^{_LEAD}(?P<fact>(?:i am|i'm) (?:allergic to|vegetarian|vegan|from)\b.*"
            r"|i live in\b.+|i work (?:at|for|as)\b.+|i was born in\b.+)$",
            re.IGNORECASE,
        ),
    ),
    (
        "my x is y",
        re.compile(
            rf"^{_LEAD}(?P<fact>my [^\W\d_][\w'’ -]{{0,40}}? (?:is|are) .+)$", re.IGNORECASE
        ),
    ),
    (
        "call me",
        re.compile(rf"^{_LEAD}call me (?P<fact>[^\W\d_][\w'’ .-]{{0,40}})$", re.IGNORECASE),
    ),
)

_KEYED = re.compile(r"^my (?P<key>[^\W\d_][\w'’ -]{0,40}?) (?:is|are) ", re.IGNORECASE)

_SECRET = re.compile(
    r"pass(?:word|code|phrase)|\bpin\b|social security|\bssn\b|credit card|card number|"
    r"\bcvv\b|\bcvc\b|api[ _-]?key|\btoken\b|secret|private key|\biban\b|account number|"
    r"\bseed phrase\b|recovery (?:code|phrase)",
    re.IGNORECASE,
)

_QUESTION = re.compile(
    r"^(?:what|who|whom|whose|where|when|why|how|which|do|does|did|is|are|was|were|can|"
    r"could|would|will|should|shall|may|might|have|has|if|whether)\b",
    re.IGNORECASE,
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|[\r\n]+")


@dataclass(frozen=True)
class Fact:
    """A durable fact found in a user's message.

    Attributes:
        text: the fact in the user's words (``"I prefer metric units"``).
        rule: which rule found it (``remember``, ``preference``, ...).
        key: what it is about when a newer fact of the same key replaces it
            (``"favourite colour"`` for "my favourite colour is green"), else ``None``.
    """

    text: str
    rule: str
    key: str | None = None


def sentences(text: str) -> list[str]:
    """The sentences of the first :data:`MAX_SCANNED` characters of ``text``."""
    return [s.strip() for s in _SENTENCE_END.split(text[:MAX_SCANNED]) if s.strip()]


def _clean(fact: str) -> str:
    return " ".join(fact.split()).rstrip(" .!;,")


def _key(fact: str, rule: str) -> str | None:
    if rule == "call me":
        return "name"
    keyed = _KEYED.match(fact)
    return " ".join(keyed.group("key").lower().split()) if keyed else None


def facts(message: str) -> list[Fact]:
    """The durable facts ``message`` states, in order, at most :data:`MAX_FACTS`."""
    found: list[Fact] = []
    for sentence in sentences(message):
        if sentence.endswith("?") or (
            _QUESTION.match(sentence) and "remember" not in sentence.lower()
        ):
            continue
        for rule, pattern in _RULES:
            match = pattern.match(sentence)
            if match is None:
                continue
            fact = _clean(match.group("fact"))
            if rule == "call me":
                fact = f"call me {fact}"
            if 3 <= len(fact) <= MAX_FACT and not _SECRET.search(fact):
                found.append(Fact(fact, rule, _key(fact, rule)))
            break
        if len(found) >= MAX_FACTS:
            break
    return found
