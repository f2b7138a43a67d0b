"""The fast paths of capability search compute what the plain ones do."""

from __future__ import annotations

import numpy as np
import pytest

from oracle_core.capabilities.search.analyzer import Analyzer, split_clauses
from oracle_core.capabilities.search.fusion import _ranked_over
from oracle_core.capabilities.search.index import Groups
from oracle_core.capabilities.search.scoring import product


def test_wordllama_texts_embed_as_wordllama_pools_them() -> None:
    from oracle_core.capabilities.search import WordLlamaEmbedder
    from oracle_core.capabilities.search.embeddings import _unit

    embedder = WordLlamaEmbedder()
    texts = [
        "convert 20 euros to dollars",
        "",
        "a",
        "Book a table. Then call a taxi!" * 5,
        "Zürich",
    ]
    for batch in (texts, texts * 20):  # one by one, and in a batch
        mine = embedder.embed(batch)
        theirs = _unit(embedder._model.embed(list(batch)))
        assert np.abs(mine - theirs).max() < 1e-6


def test_a_request_joined_from_its_sentences_has_the_tokens_it_has_alone() -> None:
    from oracle_core.capabilities.search import WordLlamaEmbedder

    embedder = WordLlamaEmbedder()
    assert embedder._joins  # wordllama's tokenizer: sentences' tokens join at a space
    tokenizer = embedder._tokenizer
    requests = [
        "Book a table for 2 in Zürich. Then call a taxi! Is it raining?  Thanks;bye",
        "What's 3.5 + 4? Convert 20 EUR to USD; then email it.",
        "Find flights from NYC to SFO.\nAlso a hotel. ",
        "one sentence only",
    ]
    for request in requests:
        sentences = split_clauses(request)
        batch = [request, *sentences]
        ids = embedder._small_batch_ids(batch)
        assert ids == [tokenizer.encode(t, add_special_tokens=False).ids for t in batch]
        vectors = embedder.embed(batch)
        alone = np.concatenate([embedder.embed([t]) for t in batch])
        assert np.array_equal(vectors, alone)
    odd = [
        "",
        " ",
        "  two  spaces ",
        "tab\there",
        "<s> hi </s>",
        "x<unk>",
        "naïve 🚀 café",
        "a\n\nb",
    ]
    for text in odd:  # the BPE model alone, or encode where it would differ
        assert embedder._ids_of(text) == tokenizer.encode(text, add_special_tokens=False).ids


def test_a_plugins_best_item_is_its_largest_value_with_items_removed() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        groups = Groups()
        owners = np.sort(rng.integers(0, 12, rng.integers(1, 40)))
        groups.add(owners.tolist())
        for row in rng.integers(0, 12, rng.integers(0, 3)):
            groups.remove_owner(int(row))
        values = rng.standard_normal((2, len(owners))).astype(np.float32)
        ids = rng.integers(0, 5, len(owners))
        distinct = rng.standard_normal((2, 5)).astype(np.float32)
        for got, read in ((groups.best(values, 13, -1.0), values),
                          (groups.best(distinct, 13, -1.0, ids), distinct[:, ids])):  # fmt: skip
            for row in range(13):
                items = np.flatnonzero((groups.owner == row) & groups.alive)
                want = read[:, items].max(axis=1) if len(items) else np.full(2, -1.0)
                assert np.array_equal(got[:, row], want)


def test_sentence_ranks_over_the_floor_are_the_ranks_among_all() -> None:
    rng = np.random.default_rng(3)
    values = rng.standard_normal((3, 200)).astype(np.float32) * 4
    alive = rng.random(200) > 0.1
    got = _ranked_over(values, alive, 2.0, 3.0)
    for row in range(3):
        order = [int(i) for i in np.argsort(-np.where(alive, values[row], -np.inf))]
        for rank, column in enumerate(order):
            want = 1 / (3 + rank) if rank < 50 and alive[column] and values[row, column] >= 3 else 0
            assert got[row, column] == pytest.approx(want)


@pytest.mark.parametrize("rows", [1, 2, 4, 19])
def test_a_product_in_blocks_is_the_product(rows: int) -> None:
    rng = np.random.default_rng(rows)
    left = rng.standard_normal((rows, 64)).astype(np.float32)
    right = rng.standard_normal((64, 3001)).astype(np.float32)
    assert np.allclose(product(left, right), left @ right, atol=1e-4)
    laid_out = np.ascontiguousarray(right.T).T  # the index's layout (Fortran order)
    assert np.allclose(product(left, laid_out), left @ right, atol=1e-4)


def test_a_requests_terms_are_its_clauses_terms() -> None:
    analyzer = Analyzer()
    for text in ["Book a flight.  Then get the weather!\nAlso: convertUnits; e.g. 3.5 km", "ok"]:
        clauses = [t for c in split_clauses(text) for t in analyzer.terms(c)]
        assert analyzer.terms(text) == clauses
