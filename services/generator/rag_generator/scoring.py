"""Sentence scoring with the embedding model: each sentence's cosine similarity to the question.

What a scoring costs is what the model reads: its time grows with the word pieces of a run,
padding included (every text of a run is padded to the longest), plus a fixed cost per run. So
the texts are embedded shortest first, in runs cut where the padding saved is worth another run,
each distinct text once, and the vectors of recent texts are kept (an LRU keyed by the text:
the same passages answer many questions, and a repeated question skips the model).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from rag_common.store.embedding import Embedder

# The fixed cost of one model run, in characters of text (about 30 word pieces): measured as the
# intercept of run time against padded word pieces (one text of 8 pieces costs as much as about
# 30 more pieces in a run that already exists).
RUN_COST_CHARS = 120
# A run never holds more texts than this (bounds the model's working memory per run).
MAX_RUN = 32

Vectors = NDArray[np.float32]
# texts -> their unit vectors, one row each, in order (one model run)
EmbedRun = Callable[[list[str]], Vectors]


def plan_runs(lengths: Sequence[int], run_cost: int = RUN_COST_CHARS, max_run: int = MAX_RUN) -> list[list[int]]:
    """Indices of the texts grouped into model runs, shortest first, at least total cost.

    A run costs ``run_cost`` plus its size times its longest text (the padding); texts sorted by
    length are cut into consecutive runs by dynamic programming (at most ``max_run`` each).
    """
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    sizes = [lengths[i] for i in order]
    n = len(sizes)
    best = [0] + [0] * n
    start = [0] * (n + 1)
    for end in range(1, n + 1):
        best[end], start[end] = min(
            (best[first] + run_cost + sizes[end - 1] * (end - first), first)
            for first in range(max(0, end - max_run), end)
        )
    runs: list[list[int]] = []
    end = n
    while end > 0:
        runs.append(order[start[end] : end])
        end = start[end]
    return runs[::-1]


class EmbeddingScorer:
    """A ``SentenceScorer`` (``rag_generator.extractive``) backed by the embedding model.

    Safe to share between threads (answers are drafted in worker threads). ``cache_size`` texts'
    vectors are kept, least recently used out first; 0 turns the cache off.
    """

    def __init__(self, embed: EmbedRun, cache_size: int = 0) -> None:
        self._embed = embed
        self.cache_size = cache_size
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, question: str, sentences: Sequence[str]) -> list[float]:
        vectors = self.vectors([question, *sentences])
        return [float(x) for x in vectors[1:] @ vectors[0]]

    def vectors(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors of ``texts``, one row each, in order."""
        found = self._cached(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        for run in plan_runs([len(t) for t in missing]):
            batch = [missing[i] for i in run]
            for text, vector in zip(batch, _unit(self._embed(batch)), strict=True):
                found[text] = vector
        self._keep({t: found[t] for t in missing})
        return np.stack([found[t] for t in texts]) if texts else np.zeros((0, 0), dtype=np.float32)

    def _cached(self, texts: Sequence[str]) -> dict[str, Vectors]:
        if not self.cache_size:
            return {}
        with self._lock:
            hits = {t: self._cache[t] for t in texts if t in self._cache}
            for text in hits:
                self._cache.move_to_end(text)
        return hits

    def _keep(self, vectors: dict[str, Vectors]) -> None:
        if not self.cache_size or not vectors:
            return
        with self._lock:
            self._cache.update(vectors)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)


def _unit(vectors: Vectors) -> Vectors:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms: Vectors = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return vectors / norms


def embedding_scorer(embedder: Embedder, cache_size: int = 0) -> EmbeddingScorer:
    """Sentence scores with the model the index was built with; each run is one model call."""

    def embed(texts: list[str]) -> Vectors:
        return np.asarray(list(embedder.dense.embed(texts, batch_size=len(texts))), dtype=np.float32)

    return EmbeddingScorer(embed, cache_size)
