"""Capability search: which plugins fit a short task description, best first.

One concept a module: :mod:`.analyzer` (text to terms), :mod:`.documents` (what is read of a
plugin), :mod:`.lexical` (BM25), :mod:`.embeddings` and :mod:`.vectors` (the semantic
ranker's embedders and their per-plugin cache), :mod:`.index` (the catalog's index),
:mod:`.scoring` (one query's raw scores), :mod:`.fusion`, :mod:`.fit`, :mod:`.explain` and
:mod:`.service` (:class:`CapabilitySearch`). Importing this package imports numpy, not
wordllama or litellm: those load on the first search that needs them.
"""

from oracle_core.capabilities.search.analyzer import Analyzer, split_clauses
from oracle_core.capabilities.search.embeddings import (
    Embedder,
    LiteLLMEmbedder,
    WordLlamaEmbedder,
    embedder_for,
)
from oracle_core.capabilities.search.fit import FIT, FitRule, Match
from oracle_core.capabilities.search.fusion import DEFAULT, FUSIONS, Fusion
from oracle_core.capabilities.search.service import (
    MAX_CANDIDATES,
    MAX_MATCHED_TOOLS,
    Candidate,
    CapabilitySearch,
    Mode,
)

__all__ = [
    "DEFAULT",
    "FIT",
    "FUSIONS",
    "MAX_CANDIDATES",
    "MAX_MATCHED_TOOLS",
    "Analyzer",
    "Candidate",
    "CapabilitySearch",
    "Embedder",
    "FitRule",
    "Fusion",
    "LiteLLMEmbedder",
    "Match",
    "Mode",
    "WordLlamaEmbedder",
    "embedder_for",
    "split_clauses",
]
