"""The retriever's copy of the kept questions of the answer cache, in memory (pure).

A lookup compares a new question's MiniLM vector with the kept ones of its tenant and collection,
a matrix product over a few hundred to a few thousand vectors; the nearest one at the threshold
or above serves only when ``cache_match.may_serve`` agrees (anchors and sense). A key-value watch
of the bucket's ``q.`` keys keeps it current (``answer_cache.AnswerCache.follow``).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rag_common.store.cache_match import may_serve
from rag_common.wire.messages import CacheScope
from rag_common.wire.messages.cache import CachedQuestion


def encode_vector(vector: Sequence[float]) -> str:
    """A vector as the cache keeps it: float32, base64 (a third of the JSON list's size)."""
    return base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode("ascii")


def decode_vector(text: str) -> np.ndarray:
    """A vector kept by ``encode_vector``."""
    return np.frombuffer(base64.b64decode(text), dtype=np.float32)


@dataclass(frozen=True)
class Nearest:
    """The kept question nearest to a new one, with their cosine, as a lookup reports it."""

    key: str  # the question's key (``q.…``)
    cosine: float


@dataclass
class _Kept:
    question: str
    version: int
    context: str
    vector: np.ndarray
    stored_at: float


class Mirror:
    """The kept questions in memory: what a lookup compares a new question's vector with.

    By tenant and collection, as the bucket's ``q.`` keys say (a watch keeps it current).
    """

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str], dict[str, _Kept]] = {}
        self._matrices: dict[tuple[str, str], tuple[list[str], np.ndarray]] = {}

    def __len__(self) -> int:
        return sum(len(group) for group in self._groups.values())

    def put(self, key: str, record: CachedQuestion) -> None:
        """Hold a kept question (its vector at unit length); a zero vector can match nothing and is skipped."""
        vector = decode_vector(record.vector)
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:
            return
        group = (record.tenant, record.collection)
        kept = _Kept(record.question, record.version, record.context, vector / norm, record.stored_at)
        self._groups.setdefault(group, {})[key] = kept
        self._matrices.pop(group, None)

    def remove(self, key: str) -> None:
        """Forget a question the bucket no longer holds."""
        for group, kept in list(self._groups.items()):
            if kept.pop(key, None) is not None:
                self._matrices.pop(group, None)
                if not kept:
                    del self._groups[group]

    def clear(self) -> None:
        """Forget every question, before a watch that starts again refills the mirror."""
        self._groups.clear()
        self._matrices.clear()

    def _drop_stale(self, group: tuple[str, str], version: int, not_before: float) -> None:
        """Forget a group's questions of an older index version, or older than the TTL."""
        kept = self._groups.get(group, {})
        stale = [key for key, k in kept.items() if k.version < version or k.stored_at < not_before]
        for key in stale:
            del kept[key]
        if stale:
            self._matrices.pop(group, None)

    def nearest(
        self, scope: CacheScope, vector: Sequence[float], question: str, *, min_cosine: float, not_before: float
    ) -> Nearest | None:
        """The closest kept question of ``scope`` at ``min_cosine`` or more that may serve it (``may_serve``)."""
        group = (scope.tenant, scope.collection)
        self._drop_stale(group, scope.version, not_before)
        kept = self._groups.get(group)
        if not kept:
            return None
        keys, matrix = self._matrix(group, kept)
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query))
        if norm == 0.0:
            return None
        cosines = matrix @ (query / norm)
        for i in np.argsort(-cosines):
            cosine = float(cosines[i])
            if cosine < min_cosine:
                return None
            k = kept[keys[i]]
            if k.version == scope.version and k.context == scope.context and may_serve(k.question, question):
                return Nearest(keys[i], cosine)
        return None

    def _matrix(self, group: tuple[str, str], kept: dict[str, _Kept]) -> tuple[list[str], np.ndarray]:
        built = self._matrices.get(group)
        if built is None:
            keys = list(kept)
            built = keys, np.stack([kept[key].vector for key in keys])
            self._matrices[group] = built
        return built
