"""Embedders for the semantic ranker of capability search: offline ``wordllama``, or litellm.

- :class:`WordLlamaEmbedder`: the static embeddings shipped in the ``wordllama`` wheel (a
  core dependency), loaded from the package folder; nothing is ever downloaded. It is
  imported on the first search only, never with ``oracle_core``.
- :class:`LiteLLMEmbedder`: any litellm embedding model (``ORACLE_EMBEDDING_MODEL``), for
  operators with a provider.

With ``ORACLE_EMBEDDING_MODEL=none`` (or without wordllama), search is lexical alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from oracle_core.capabilities.search.analyzer import split_clauses

if TYPE_CHECKING:
    from oracle_core.settings import Settings

_BATCH = 256
"""Texts sent in one embeddings request."""


class Embedder(Protocol):
    """Turns texts into unit vectors; ``name`` says which model (it keys the index cache)."""

    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-length row per text, as ``float32``."""
        ...


def _unit(vectors: Any) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        array = array.reshape(len(array), -1)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return np.asarray(array / np.maximum(norms, 1e-12), dtype=np.float32)


def _import_wordllama() -> Any:
    """Import ``wordllama`` without the root logging handler its import installs."""
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama  # type: ignore[import-untyped]
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    return wordllama


_SMALL_BATCH = 64
"""Up to this many texts are tokenized one by one (a search's queries and sentences): the
tokenizer's thread pool costs more than it saves on a few texts, most of all on a busy
machine."""


_CHUNK = 512
"""Texts embedded together at most (the index's many texts go in chunks of this many)."""


class WordLlamaEmbedder:
    """``wordllama``'s bundled 256-dimension static embeddings, loaded offline."""

    def __init__(self) -> None:
        from pathlib import Path

        wordllama = _import_wordllama()
        folder = Path(wordllama.__file__).parent
        self._model = wordllama.WordLlama.load(cache_dir=folder, disable_download=True)
        # A copy of its tokenizer that pads nothing: each text is read over its own tokens.
        tokenizer = self._model.tokenizer
        self._tokenizer = type(tokenizer).from_str(tokenizer.to_str())
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._joins = _tokens_join(self._tokenizer)
        self._model_tokenize = self._tokenizer.model.tokenize
        # Texts holding none of these are tokenized by the BPE model alone (see _ids_of).
        self._added = [t.content for t in self._tokenizer.get_added_tokens_decoder().values()]
        self.name = f"wordllama-{getattr(wordllama, '__version__', '0')}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (an empty list gives an empty array): each text's mean token vector,
        as wordllama's ``embed`` computes it, but over the texts' tokens alone (wordllama pads
        every text to the longest of the batch: a long request beside its short sentences
        cost ten times the work)."""
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        if len(texts) > _CHUNK:  # bounded memory: at most a chunk's token vectors at once
            return np.concatenate([
                self.embed(texts[at : at + _CHUNK]) for at in range(0, len(texts), _CHUNK)
            ])  # fmt: skip
        table = self._model.embedding
        tokenizer = self._tokenizer
        if len(texts) > _SMALL_BATCH:
            encoded = tokenizer.encode_batch(list(texts), add_special_tokens=False)
            pieces = [e.ids for e in encoded]
        else:  # a search's few texts: one by one, without the tokenizer's thread pool
            pieces = self._small_batch_ids(texts)
        lengths = np.array([len(p) for p in pieces], dtype=np.int64)
        tokens = np.fromiter(chain.from_iterable(pieces), np.int64, int(lengths.sum()))
        tokens = np.clip(tokens, 0, table.shape[0] - 1)
        sums = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
        if len(tokens):
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
            has = lengths > 0
            sums[has] = np.add.reduceat(table[tokens], starts[has], axis=0)
        return _unit(sums / np.maximum(lengths, 1)[:, None].astype(np.float32))

    def _small_batch_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of a search's few texts, each sentence tokenized once: a request
        that is its sentences joined by single spaces, every one of them in the batch, gets
        their ids one after the other (the tokenizer reads them so, see
        :func:`_tokens_join`)."""
        encode = self._ids_of
        ids: dict[str, list[int]] = {}
        joined: list[tuple[str, list[str]]] = []
        batch = set(texts)
        for text in texts:
            parts = split_clauses(text) if self._joins else []
            if len(parts) > 1 and " ".join(parts) == text and batch.issuperset(parts):
                joined.append((text, parts))
            elif text not in ids:
                ids[text] = encode(text)
        for text, parts in joined:
            for part in parts:
                if part not in ids:  # (a sentence is never itself joined; kept safe)
                    ids[part] = encode(part)
            ids[text] = [i for part in parts for i in ids[part]]
        return [ids[t] for t in texts]

    def _ids_of(self, text: str) -> list[int]:
        """The token ids of ``text``, as ``encode`` gives them without special tokens.

        With wordllama's tokenizer (see :func:`_tokens_join`) that is its normalizer, done
        here, and the BPE model alone (half the time: no encoding object, offsets or masks),
        unless the text holds an added token's content (``<s>``) the tokenizer would match
        first."""
        normalized = "\u2581" + text.replace(" ", "\u2581")
        if not self._joins or not text or any(a in normalized for a in self._added):
            return list(self._tokenizer.encode(text, add_special_tokens=False).ids)
        return [token.id for token in self._model_tokenize(normalized)]


def _tokens_join(tokenizer: Any) -> bool:
    """Whether texts joined by a single space tokenize as their tokens one after the other.

    True of wordllama's SentencePiece-style tokenizer: no pre-tokenizer, a normalizer that
    only prepends ``▁`` and turns spaces into ``▁``, and no token holding ``▁`` but at its
    start (or only ``▁``), so no merge spans the ``x▁y`` between two texts and each is
    merged as it is alone (``▁`` prepended)."""
    import json

    try:
        config = json.loads(tokenizer.to_str())
    except (ValueError, AttributeError):
        return False
    normalizer = config.get("normalizer") or {}
    expected = [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
    ]
    return (
        config.get("pre_tokenizer") is None
        and (config.get("model") or {}).get("type") == "BPE"
        and normalizer.get("type") == "Sequence"
        and normalizer.get("normalizers") == expected
        and not any("\u2581" in token.lstrip("\u2581") for token in tokenizer.get_vocab())
    )


class LiteLLMEmbedder:
    """Any litellm embedding model; litellm is imported on first use only.

    Args:
        model: a litellm embedding model string, e.g. ``openai/text-embedding-3-small``.
        api_base: the embeddings server's base URL (``None``: the provider's).
    """

    def __init__(self, model: str, api_base: str | None = None) -> None:
        self.model = model
        self.api_base = api_base
        self.name = f"litellm-{model}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in batches.

        Raises:
            ConfigError: litellm failed (an unknown model or provider, a missing key, a
                server that does not answer), naming ``ORACLE_EMBEDDING_MODEL`` and the fix.
        """
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        from oracle_core.environment import import_litellm

        litellm = import_litellm()  # its price map from the package, never downloaded
        rows: list[list[float]] = []
        for start in range(0, len(texts), _BATCH):
            batch = [t or " " for t in texts[start : start + _BATCH]]
            try:
                response = litellm.embedding(model=self.model, input=batch, api_base=self.api_base)
            except Exception as error:
                raise _embedding_error(self.model, error) from None
            data = sorted(response.data, key=lambda item: _get(item, "index"))
            rows += [list(_get(item, "embedding")) for item in data]
        return _unit(rows)


def _embedding_error(model: str, error: Exception) -> Exception:
    from oracle_core.errors import ConfigError
    from oracle_core.settings.reading import ENVIRONMENT

    lines = [line for line in str(error).splitlines() if line.strip()]
    reason = " ".join((lines[0] if lines else type(error).__name__).split())[:200]
    return ConfigError(
        f"ORACLE_EMBEDDING_MODEL={model!r} cannot embed ({reason}); set it to a litellm "
        "embedding model with its key (e.g. openai/text-embedding-3-small), or to none for "
        "lexical search only",
        source=ENVIRONMENT,
        key="ORACLE_EMBEDDING_MODEL",
        expected="a litellm embedding model",
    )


def _get(item: Any, key: str) -> Any:
    return item[key] if isinstance(item, dict) else getattr(item, key)


def embedder_for(settings: Settings) -> Embedder | None:
    """The embedder ``settings`` ask for: ``ORACLE_EMBEDDING_MODEL``, else wordllama if installed.

    ``ORACLE_EMBEDDING_MODEL=none`` turns the semantic ranker off.
    """
    model = settings.embedding_model
    if model and model.lower() == "none":
        return None
    if model:
        return LiteLLMEmbedder(model, settings.embedding_api_base or settings.api_base)
    try:
        return WordLlamaEmbedder()
    except ImportError:
        return None
