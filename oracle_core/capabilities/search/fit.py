"""The fit rule: does anything in the catalog plausibly relate to a query, and what.

It is decided on the query as a whole: the query gets its ranked candidates when its best
candidates are plausibly related, by meaning (cosine over :attr:`FitRule.cosine_floor`) or
by words (:func:`word_evidence` over :attr:`FitRule.evidence_floor`), and none otherwise.
Only evidence *for* a plugin counts: words the catalog does not hold (names, values,
numbers, places) add nothing and take nothing away, so "weather in porto" is as much about
weather as "weather". The floors were calibrated on the tuning sets so that an on-topic
request is rarely left with nothing (worse than an off-topic one given weak candidates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from oracle_core.capabilities.search.index import CatalogIndex
from oracle_core.capabilities.search.scoring import Scores, known_cosine

Match = Literal["strong", "weak"]
"""How well a candidate fits: ``strong`` when it alone makes the query fit, else ``weak``."""


@dataclass(frozen=True)
class FitRule:
    """The calibrated floors of the fit rule.

    Attributes:
        cosine_floor: a query fits when one of its first candidates is this close.
        evidence_floor: ... or holds this much word evidence.
        paired_cosine: ... or is this close while holding ``paired_evidence`` (one fully
            specific word and some closeness in meaning; without embeddings the word alone).
        paired_evidence: see ``paired_cosine``.
        covered_evidence: ... or holds, in what it is for, every query word the catalog
            knows, with at least this much evidence ("convert units" among twelve unit
            converters: no single word is rare, together they fit) and is
            ``covered_cosine`` close (without embeddings: the words alone).
        covered_cosine: see ``covered_evidence``.
        wordless_cosine: a query none of whose words the catalog knows (only numbers,
            names, values: "what is 15% of 80") is decided by meaning alone, at this floor.
        short_terms: a query of at most this many search terms is *short* ...
        short_cosine: ... and fits when one of its first candidates is this close: two or
            three words rarely add up to the word evidence floors ("track my package"), so
            a short query is decided by meaning at the floor a candidate is listed at.
        candidate_cosine: a candidate is listed when it is this close ...
        candidate_evidence: ... or holds this much word evidence.
        long_field_share: what a word counts when a plugin holds it only in tool
            descriptions or parameter texts (a generic word there says little).
        specific_share: a word held by at most this share of the catalog is fully
            specific (counts 1 toward the evidence floors); commoner ones count less.
        depth: how many of the first candidates the query-level decision looks at.
    """

    cosine_floor: float = 0.75
    evidence_floor: float = 1.5
    paired_cosine: float = 0.3
    paired_evidence: float = 0.9
    covered_evidence: float = 0.6
    covered_cosine: float = 0.3
    wordless_cosine: float = 0.35
    short_terms: int = 3
    short_cosine: float = 0.35
    candidate_cosine: float = 0.35
    candidate_evidence: float = 0.3
    long_field_share: float = 0.5
    specific_share: float = 0.03
    depth: int = 6


FIT = FitRule()
"""The fit rule search uses, calibrated with ``bench/search.py --tune --fit`` on BFCL-live
``tune.jsonl`` and the even half of the off-topic requests: among the floors that leave at
most 5% of the tuning requests without a candidate (4.3%), those that give the fewest
off-topic requests candidates (26.7%). Stricter floors that leave 80% of the off-topic half
empty would leave 8.2% of the on-topic requests empty, the worse failure.

The short-query floor was calibrated (``--tune --fit``) on the short task descriptions of
``bench/data/bfcl_short_tasks_tune.jsonl`` with the same tuning requests: of the floors
(queries of at most 2 to 6 terms, cosine 0.25 to 0.5) that give no more of the off-topic half
candidates than the rule without it, those of at most 3 terms and cosine 0.32 to 0.40 leave the
fewest tuning requests empty (4.0% instead of 4.3%; short tasks 0.9% either way); 0.35, the
middle of that range, is the floor a candidate is listed at. Looser floors (0.3) give 10
points more of the off-topic half candidates."""


def word_evidence(index: CatalogIndex, scores: Scores, row: int, rule: FitRule) -> float:
    """How many specific query words plugin ``row`` holds (see :attr:`FitRule.specific_share`).

    A word in what the plugin is for (name, title, summary, ``when_to_use``, examples, tags,
    category, tool names) counts its specificity among those fields of the catalog: "weather"
    is specific even where ten plugins are about weather, "get" is not. A word only in the
    plugin's long fields (tool descriptions, parameter texts) counts ``share`` of its
    specificity among whole documents (``rule.long_field_share``).
    """
    named, long = _specificities(index, scores, rule)
    naming = index.naming[row]
    total = sum(named[t] for t in naming & named.keys())
    rest = (long.keys() - naming) & index.plugin_lexical.terms_of(row)
    return total + rule.long_field_share * sum(long[t] for t in rest)


def _specificities(
    index: CatalogIndex, scores: Scores, rule: FitRule
) -> tuple[dict[str, float], dict[str, float]]:
    """The query's known terms' specificities among naming fields, and among whole documents
    (those above 0), computed once a query: every candidate reads them."""
    key = f"_specificities_{rule.specific_share}"
    cached: tuple[dict[str, float], dict[str, float]] | None = scores.__dict__.get(key)
    if cached is None:
        share = rule.specific_share
        known = scores.known_terms(index)
        named = {t: index.naming_lexical.specificity(t, share) for t in known}
        long = {t: index.plugin_lexical.specificity(t, share) for t in known}
        cached = (named, {t: v for t, v in long.items() if v})
        scores.__dict__[key] = cached
    return cached


def cosine(index: CatalogIndex, scores: Scores, row: int) -> float:
    """The query's best cosine to plugin ``row`` (``-1`` without embeddings)."""
    semantic = scores.semantic
    return -1.0 if semantic is None else float(semantic[row])


def paired_cosine(index: CatalogIndex, scores: Scores, row: int) -> float:
    """The cosine the paired and covered routes read: of the whole query or of its words the
    catalog knows, whichever is closer, so a long place name cannot dilute the meaning of
    "weather" below the paired floor. (The plain cosine floor reads the whole query only: a
    chit-chat request cut to its one known word would look on topic.)"""
    return max(cosine(index, scores, row), known_cosine(index, scores, row))


def plausible(
    index: CatalogIndex, scores: Scores, row: int, rule: FitRule
) -> tuple[bool, float, float]:
    """Whether ``row`` may be listed, with its cosine and word evidence."""
    similarity = cosine(index, scores, row)
    evidence = word_evidence(index, scores, row, rule)
    listed = similarity >= rule.candidate_cosine or evidence >= rule.candidate_evidence
    return listed, similarity, evidence


def covers(index: CatalogIndex, scores: Scores, row: int) -> bool:
    """Whether plugin ``row`` holds, in what it is for, every query word the catalog knows.

    Words no plugin holds (names, values, places) are left out: they never count against.
    """
    known = scores.known_terms(index)
    naming = index.naming[row]
    return bool(known) and all(t in naming for t in known)


def knows_a_word(index: CatalogIndex, scores: Scores) -> bool:
    """Whether some plugin holds one of the query's words."""
    return bool(scores.known_terms(index))


def passes(
    similarity: float,
    evidence: float,
    rule: FitRule,
    semantic: bool = True,
    covered: bool = False,
    wordless: bool = False,
    paired: float | None = None,
    short: bool = False,
) -> bool:
    """Whether one candidate's ``(cosine, evidence)`` makes its query fit (``covered``: it
    holds every known query word; ``wordless``: the catalog knows none of them; ``paired``:
    its :func:`paired_cosine`, default ``similarity``; ``short``: the query is
    :func:`short`)."""
    if similarity >= rule.cosine_floor or evidence >= rule.evidence_floor:
        return True
    if short and similarity >= rule.short_cosine:
        return True
    similarity = similarity if paired is None else max(similarity, paired)
    if wordless and similarity >= rule.wordless_cosine:
        return True
    close = similarity >= rule.covered_cosine or not semantic
    if covered and close and evidence >= rule.covered_evidence:
        return True
    close_enough = similarity >= rule.paired_cosine or not semantic
    return close_enough and evidence >= rule.paired_evidence


def short(scores: Scores, rule: FitRule) -> bool:
    """Whether the query is short: at most :attr:`FitRule.short_terms` search terms."""
    return 0 < len(scores.terms) <= rule.short_terms


def query_fits(
    measures: list[tuple[float, float, bool, float]],
    rule: FitRule,
    semantic: bool = True,
    wordless: bool = False,
    is_short: bool = False,
) -> bool:
    """Whether a query fits: one of its first candidates' ``(cosine, evidence, covers,
    paired cosine)`` passes (``is_short``: the query is :func:`short`)."""
    return any(
        passes(c, e, rule, semantic, v, wordless, p, is_short)
        for c, e, v, p in measures[: rule.depth]
    )


def match(passed: bool) -> Match:
    """``strong`` for a candidate that makes its query fit on its own, else ``weak`` (it is
    listed because it is plausibly related to a query another candidate fits)."""
    return "strong" if passed else "weak"
