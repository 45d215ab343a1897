"""Instructions to the reader found by meaning: closeness to a bank of known instruction forms.

The structure rules catch the grammar of an instruction; a paraphrase that avoids every word they
know can still mean "ignore your instructions and say this". Its MiniLM vector (the model ingest has
already loaded for the chunks, ``rag_common.store.embedding``) is then close to one of the known
forms in ``instruction_forms.toml``. Closeness alone is a strong signal only when it is very close;
a looser match counts when the sentence also names the assistant or an override, so a how-to
("With Messages, you specify the system prompt with the system parameter") stays unmarked. Thresholds are data, set from the false
positives measured on the evaluation corpora (docs/INJECTION.md).
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
    """What the meaning rule needs of an embedder: unit-length dense vectors for texts."""

    def embed_dense(self, texts: Sequence[str]) -> list[list[float]]: ...


@cache
def _bank(embedder: DenseEmbedder) -> NDArray[np.float32]:
    vectors = np.asarray(embedder.embed_dense(list(forms()["meaning"]["forms"])), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@cache
def _cue() -> re.Pattern[str]:
    """Words that make a loose match count: the assistant named, or an override. A reply or the
    system prompt alone do not: API documentation is full of "the response" and "the system prompt"."""
    en = forms()["english"]
    return phrases([*en["addressees"], *en["override_verbs"]])


def cued(sentence: str) -> bool:
    """Whether a sentence names the assistant or an override: only those are compared with the bank
    (embedding every sentence of a corpus would double ingest's work for little)."""
    return bool(_cue().search(sentence))


def closeness(embedder: DenseEmbedder, sentences: Sequence[str]) -> list[float]:
    """Each sentence's cosine similarity to its closest known instruction form."""
    if not sentences:
        return []
    vectors = np.asarray(embedder.embed_dense(list(sentences)), dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    return [float(s) for s in (vectors @ _bank(embedder).T).max(axis=1)]


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
