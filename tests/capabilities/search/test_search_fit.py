"""The fit rule, seen from what a user gets: candidates when something is plausibly related,
nothing when nothing is, whatever names, numbers or places a request holds."""

from __future__ import annotations

import json
import random
import tempfile
from typing import Any

import pytest

from oracle_core.capabilities.meta_tools.finding import search_capabilities
from oracle_core.capabilities.search import CapabilitySearch, WordLlamaEmbedder
from oracle_core.oracle import Oracle
from oracle_core.plugins.registry import Registry
from oracle_core.settings import Settings

SHIPPED = ("oracle_plugin_weather", "oracle_plugin_clock", "oracle_plugin_calculator",
           "oracle_plugin_memory")  # fmt: skip


@pytest.fixture(scope="module")
def shipped() -> CapabilitySearch:
    """Search over the first-party plugins as installed, with the default semantic ranker."""
    modules = [pytest.importorskip(name) for name in SHIPPED]
    with tempfile.TemporaryDirectory() as home:
        oracle = Oracle(
            modules, entry_points=False, settings=Settings.from_env({"ORACLE_HOME": home})
        )
        registry = oracle.registry
    return CapabilitySearch(registry, embedder=WordLlamaEmbedder())


def _names(search: CapabilitySearch, *queries: str) -> list[list[str]]:
    return [[c.plugin.name for c in found] for found in search.search(list(queries))]


@pytest.mark.parametrize(
    ("request_text", "plugin"),
    [
        ("weather in porto", "weather"),
        ("time in Lima", "clock"),
        ("what is 15% of 80", "calculator"),
        ("current weather forecast", "weather"),
        ("will it rain in Reykjavík on Saturday?", "weather"),
        ("what time is it in Tokyo right now", "clock"),
        ("how many km is 26.2 miles", "calculator"),
        ("remember that I prefer metric units", "memory"),
    ],
)
def test_natural_requests_find_the_shipped_plugin_first(
    shipped: CapabilitySearch, request_text: str, plugin: str
) -> None:
    assert _names(shipped, request_text)[0][:1] == [plugin]


@pytest.mark.parametrize(
    "place", ["Porto", "Lima", "Ouagadougou", "Llanfairpwllgwyngyll", "São Paulo", "Zürich"]
)
def test_a_place_never_counts_against_a_match(shipped: CapabilitySearch, place: str) -> None:
    assert _names(shipped, f"weather in {place}")[0][:1] == ["weather"]


@pytest.mark.parametrize("number", ["7", "15", "2,340", "0.25", "12345678901234567890"])
def test_numbers_and_values_never_count_against_a_match(
    shipped: CapabilitySearch, number: str
) -> None:
    assert _names(shipped, f"what is {number}% of 80")[0][:1] == ["calculator"]
    assert _names(shipped, f"forecast for the next {number} days")[0][:1] == ["weather"]


@pytest.mark.parametrize(
    "chat",
    ["hello there", "thanks, that is all", "tell me a joke", "asdf qwerty zxcv", "ok", "lol"],
)
def test_chit_chat_finds_nothing(shipped: CapabilitySearch, chat: str) -> None:
    assert _names(shipped, chat) == [[]]


@pytest.mark.parametrize("blank", ["", " ", "\n\t ", "?!.", "42"])
def test_empty_whitespace_and_symbol_queries_never_fail(
    shipped: CapabilitySearch, blank: str
) -> None:
    found = shipped.search([blank])

    assert len(found) == 1 and len(found[0]) <= 6


def test_four_queries_at_once_each_get_their_own_candidates_in_order(
    shipped: CapabilitySearch,
) -> None:
    outcome = search_capabilities(
        shipped, (), {"queries": ["weather in porto", "hello there", "time in Lima", "15% of 80"]}
    )
    found: list[dict[str, Any]] = json.loads(outcome.content)

    assert [item["query"] for item in found] == [
        "weather in porto",
        "hello there",
        "time in Lima",
        "15% of 80",
    ]
    assert [[r["name"] for r in item["results"]][:1] for item in found] == [
        ["weather"],
        [],
        ["clock"],
        ["calculator"],
    ]
    assert "note" in found[1]


def test_a_very_long_request_still_finds_its_plugin_and_stays_bounded(
    shipped: CapabilitySearch,
) -> None:
    filler = "My cousin visited last summer and we talked about many things. " * 40
    found = shipped.search([filler + "What will the weather be in Porto tomorrow?"])[0]

    assert len(found) <= 6
    assert "weather" in [c.plugin.name for c in found][:2]


@pytest.mark.parametrize("text", ["東京の天気", "погода в Москве", "مرحبا كيف حالك", "😀🎉"])
def test_non_latin_text_never_fails_and_stays_bounded(shipped: CapabilitySearch, text: str) -> None:
    found = shipped.search([text])[0]

    assert len(found) <= 6
    assert all(c.match in ("strong", "weak") for c in found)


def test_each_candidate_says_whether_it_is_a_strong_or_weak_match(
    shipped: CapabilitySearch,
) -> None:
    found = shipped.search(["current weather forecast"])[0]

    assert found[0].match == "strong"
    assert {c.match for c in found} <= {"strong", "weak"}


def test_random_requests_of_catalog_words_names_and_numbers_never_fail(
    shipped: CapabilitySearch,
) -> None:
    rng = random.Random(21)
    words = ["weather", "time", "convert", "remember", "Lima", "Porto", "42", "%", "the", "é",
             "in", "?", ".", "km", "miles", "tomorrow", "Ξ", "\n"]  # fmt: skip
    for _ in range(60):
        queries = [
            " ".join(rng.choice(words) for _ in range(rng.randint(0, 30)))
            for _ in range(rng.randint(1, 4))
        ]
        found = shipped.search(queries)
        assert len(found) == len(queries)
        for candidates in found:
            assert len(candidates) <= 6
            assert len({c.plugin.name for c in candidates}) == len(candidates)
            assert all(len(c.tools) <= 3 for c in candidates)


def test_without_embeddings_one_specific_word_is_enough(shipped: CapabilitySearch) -> None:
    lexical = CapabilitySearch(Registry(plugins=dict(shipped.registry.plugins)))

    assert _names(lexical, "weather in porto")[0][:1] == ["weather"]
    assert _names(lexical, "hello there") == [[]]


def test_explain_parts_add_up_to_the_score(shipped: CapabilitySearch) -> None:
    lexical = CapabilitySearch(Registry(plugins=dict(shipped.registry.plugins)))
    for search in (shipped, lexical):
        for explained in search.explain(["current weather forecast", "time in Lima"]):
            for one in explained:
                total = sum(one["parts"].values())
                assert abs(total - one["score"]) < 1e-3, one


def test_a_short_query_is_decided_by_meaning_at_the_short_floor() -> None:
    from oracle_core.capabilities.search.fit import FIT, passes, query_fits

    # One word in tool descriptions only (evidence 0.5), close in meaning: a short query fits,
    # a longer one with the same measures does not.
    assert passes(0.4, 0.5, FIT, short=True)
    assert not passes(0.4, 0.5, FIT, short=False)
    assert not passes(FIT.short_cosine - 0.01, 0.5, FIT, short=True)
    assert query_fits([(0.4, 0.5, False, 0.4)], FIT, is_short=True)
    assert not query_fits([(0.4, 0.5, False, 0.4)], FIT)
