"""Why a candidate was found: which fields and words matched, and the parts of its score.

Used by ``oracle search --explain`` and by the findability check, so a plugin author sees
what a request matched in their manifest and how much meaning and words each counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from oracle_core.capabilities.search.documents import (
    embedded_texts,
    plugin_fields,
    searchable_tools,
    tool_fields,
)
from oracle_core.capabilities.search.fit import FitRule, cosine, word_evidence
from oracle_core.capabilities.search.fusion import Fusion, features
from oracle_core.capabilities.search.index import CatalogIndex
from oracle_core.capabilities.search.scoring import Scores
from oracle_core.plugins.registry import Plugin


class Explained(Protocol):
    """What is explained of a candidate (:class:`~.service.Candidate` has it)."""

    @property
    def plugin(self) -> Plugin:
        """The candidate plugin."""
        ...

    @property
    def score(self) -> float:
        """Its fused score."""
        ...

    @property
    def match(self) -> str:
        """``strong`` or ``weak``."""
        ...


def matched_words(index: CatalogIndex, scores: Scores, row: int) -> dict[str, list[str]]:
    """Per field of plugin ``row`` (and per tool, as ``tool:<name>``), the query terms it holds."""
    plugin = index.plugins[row]
    if plugin is None:
        return {}
    wanted = set(scores.terms)
    out: dict[str, list[str]] = {}
    for field, text in plugin_fields(plugin).items():
        if field in ("tool_names", "tool_descriptions", "parameters"):
            continue  # shown per tool below
        hits = [t for t in dict.fromkeys(index.analyzer.terms(text)) if t in wanted]
        if hits:
            out[field] = hits
    for tool in searchable_tools(plugin):
        for field, text in tool_fields(tool).items():
            hits = [t for t in dict.fromkeys(index.analyzer.terms(text)) if t in wanted]
            if hits:
                out[f"tool:{tool.name}.{field.removeprefix('tool_')}"] = hits
    return out


def closest_text(index: CatalogIndex, scores: Scores, row: int) -> dict[str, Any] | None:
    """The embedded text of plugin ``row`` closest to the query, and its cosine."""
    plugin = index.plugins[row]
    if plugin is None or scores.query_vector is None or index.embedder is None:
        return None
    texts = embedded_texts(plugin, index.fields)
    best: tuple[float, str] | None = None
    tool_rows = index.tools.of(row).tolist()
    field_rows = index.fields_of.of(row).tolist()
    tools = iter(tool_rows)
    fields = iter(field_rows)
    for where, _ in texts:
        if where == "plugin":
            assert index.sentence_vectors is not None
            vector = index.sentence_vectors[row]
        elif where.startswith("tool:"):
            assert index.tool_vectors is not None
            vector = index.tool_vectors[next(tools)]
        else:
            assert index.field_vectors is not None
            vector = index.field_vectors[index.field_ids[next(fields)]]
        value = float(np.dot(vector, scores.query_vector))
        if best is None or value > best[0]:
            best = (value, where)
    return None if best is None else {"field": best[1], "cosine": round(best[0], 4)}


def explain_candidates(
    index: CatalogIndex,
    fusion: Fusion,
    rule: FitRule,
    scores: Scores,
    candidates: Sequence[Explained],
) -> list[dict[str, Any]]:
    """One explanation a candidate: matched words by field, score parts, fit measures."""
    parts = features(scores, index.alive, fusion)
    semantic = "semantic" in parts
    # The weights ``combine`` applies: lexical ones on their own scale without embeddings.
    weights = {
        name: w / (1.0 if semantic or not name.startswith("lexical") else fusion.lexical_weight)
        for name, w in fusion.weights.items()
    }
    out = []
    for candidate in candidates:
        row = index.row_of[candidate.plugin.name]
        contributions = {
            name: round(float(weights.get(name, 0.0) * values[row]), 4)
            for name, values in parts.items()
        }
        lexical = sum(v for k, v in contributions.items() if k.startswith("lexical"))
        out.append(
            {
                "name": candidate.plugin.name,
                "score": candidate.score,
                "match": candidate.match,
                "lexical": round(lexical, 4),
                "semantic": round(
                    sum(v for k, v in contributions.items() if k.startswith("semantic")), 4
                ),
                "sentence": contributions.get("sentence", 0.0),
                "parts": contributions,
                "words": matched_words(index, scores, row),
                "evidence": round(word_evidence(index, scores, row, rule), 4),
                "cosine": round(cosine(index, scores, row), 4) if semantic else None,
                "closest": closest_text(index, scores, row),
            }
        )
    return out
