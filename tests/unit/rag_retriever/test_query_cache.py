"""The retriever embeds a repeated question once (bounded cache), and not at all when it is off."""

from __future__ import annotations

from typing import Any

import pytest

from rag_common.store.embedding import SparseVector
from rag_retriever.search import Retriever
from rag_retriever.settings import RetrieverSettings

pytestmark = pytest.mark.unit


class CountingEmbedder:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def embed_query(self, text: str) -> tuple[list[float], SparseVector]:
        self.calls.append(text)
        return [0.1, 0.2], SparseVector([1], [1.0])


class NoStore:
    def hybrid_search(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []


# Questions of keywords only: the BM25 side then searches them as embedded (no second sparse run).
def search_twice(cache_size: int) -> tuple[CountingEmbedder, list[float]]:
    embedder = CountingEmbedder()
    settings = RetrieverSettings(query_cache_size=cache_size, calibrate=False, second_dense=False)
    retriever = Retriever(settings, embedder, NoStore())  # type: ignore[arg-type]
    first, _ = retriever.search("docs", "Pro plan price", {}, 5)
    first.append(9.9)  # a caller changing its vector must not change the cached one
    second, _ = retriever.search("docs", "Pro plan price", {}, 5)
    retriever.search("docs", "Team plan price", {}, 5)
    return embedder, second


def test_a_repeated_question_is_embedded_once() -> None:
    embedder, second = search_twice(8)
    assert embedder.calls == ["Pro plan price", "Team plan price"]
    assert second == [0.1, 0.2]


def test_with_the_cache_off_every_question_is_embedded() -> None:
    embedder, _ = search_twice(0)
    assert embedder.calls == ["Pro plan price", "Pro plan price", "Team plan price"]
