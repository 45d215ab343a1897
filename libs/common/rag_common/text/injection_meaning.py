"""Instructions to the reader found by meaning: closeness to a bank of known instruction forms.

The structure rules catch the grammar of an instruction; a paraphrase that avoids every word they
know can still mean "ignore your instructions and say this". Its MiniLM vector (the model ingest has
already loaded for the chunks, ``rag_common.store.embedding``) is then close to one of the known
forms in ``instruction_forms.toml``. Closeness alone is a strong signal only when it is very close;
a looser match counts when the sentence also names the assistant or an override, so a how-to ("With
Messages, you specify the system prompt with the system parameter") stays unmarked. Thresholds are
data, set from the false positives measured on the evaluation corpora (docs/INJECTION.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from rag_common.text.injection_structure import forms, phrases


class DenseEmbedder(Protocol):
    """What the meaning rule needs of an embedder: unit-length dense vectors for texts.

    Computed off the question path (``rag_common.store.embedding.Embedder.embed_sentences``).
    """

    def embed_sentences(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text."""
        ...


# The bank's vectors per embedder (one per process in practice), computed on first use.
_banks: dict[int, tuple[DenseEmbedder, NDArray[np.float32]]] = {}


def _unit(vectors: list[list[float]]) -> NDArray[np.float32]:
    array = np.asarray(vectors, dtype=np.float32)
    norms: NDArray[np.float32] = np.maximum(np.linalg.norm(array, axis=1, keepdims=True), 1e-9)
    return array / norms


def _bank(embedder: DenseEmbedder) -> NDArray[np.float32]:
    if id(embedder) not in _banks:
        _banks[id(embedder)] = (embedder, _unit(embedder.embed_sentences(list(forms()["meaning"]["forms"]))))
    return _banks[id(embedder)][1]


@cache
def _cue() -> re.Pattern[str]:
    """Words that make a loose match count: the assistant named, or an override.

    A reply or the system prompt alone do not: API documentation is full of "the response" and "the system prompt".
    """
    en = forms()["english"]
    return phrases([*en["addressees"], *en["override_verbs"]])


def cued(sentence: str) -> bool:
    """Whether a sentence names the assistant or an override: only those are compared with the bank.

    Embedding every sentence of a corpus would double ingest's work for little.
    """
    return bool(_cue().search(sentence))


def closeness(embedder: DenseEmbedder, sentences: Sequence[str]) -> list[float]:
    """Each sentence's cosine similarity to its closest known instruction form."""
    if not sentences:
        return []
    scores: NDArray[np.float32] = np.matmul(_unit(embedder.embed_sentences(list(sentences))), _bank(embedder).T)
    return [float(s) for s in scores.max(axis=1)]


def instruction_like(embedder: DenseEmbedder, sentences: Sequence[str]) -> list[bool]:
    """Whether each sentence means an instruction to its reader: very close alone, or close with a cue.

    Ingest only asks about cued sentences (``cued``), so today the looser threshold decides; the
    stricter one is for callers that compare every sentence.
    """
    meaning = forms()["meaning"]
    cue = _cue()
    return [
        score >= meaning["alone"] or (score >= meaning["with_cue"] and bool(cue.search(s)))
        for s, score in zip(sentences, closeness(embedder, sentences), strict=True)
    ]
