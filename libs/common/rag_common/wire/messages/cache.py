"""What the answer cache keeps (``rag_common.store.answer_cache``).

What the retriever hands the evaluator so it can keep an answer (``CacheKey``) is with the query
path's messages.

The cache lives in the key-value bucket ``rag-answer-cache``, two keys per answer:
``q.<tenant>.<collection>.<digest>`` holds the ``CachedQuestion`` (small: every retriever replica
follows these keys to find rephrasings), ``a.<tenant>.<collection>.<digest>`` the ``CachedAnswer``
(read once, on a hit).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rag_common.wire.messages.query import CacheScope, Draft, Evaluation, Retrieval, Route


class CachedQuestion(CacheScope):
    """``q.<tenant>.<collection>.<digest>``: what a lookup compares a new question with."""

    type: Literal["rag.cache.question.v1"] = "rag.cache.question.v1"
    question: str
    vector: str = Field(description="the question's MiniLM vector, float32, base64")
    stored_at: float = Field(description="Unix time the answer was kept")


class CachedAnswer(CacheScope):
    """``a.<tenant>.<collection>.<digest>``: the final answer's parts as the evaluator passed them."""

    type: Literal["rag.cache.answer.v1"] = "rag.cache.answer.v1"
    question: str
    stored_at: float
    route: Route
    retrieval: Retrieval
    draft: Draft
    evaluation: Evaluation
