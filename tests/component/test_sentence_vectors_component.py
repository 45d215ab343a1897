"""Sentence vectors from ingest to answer with the real model (no broker): pooled in the chunk's own
forward pass, stored with the chunk, scored by the retriever, used by the generator with no model run."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from rag_common.store.contract import Store
from rag_common.store.embedding import Embedder, Units, get_embedder
from rag_common.store.factory import configured_store
from rag_common.store.sentence_vectors import unpack
from rag_common.text.quotable import candidate_sentences, sentence_key, unique_candidates
from rag_common.transport.telemetry import setup_telemetry
from rag_common.wire.messages import IngestRequested, Query, QueryRouted, Route
from rag_generator.drafting import Generator
from rag_generator.settings import GeneratorSettings
from rag_ingest.pipeline import index_document
from rag_ingest.settings import IngestSettings
from rag_retriever.search import Retriever
from rag_retriever.settings import RetrieverSettings

pytestmark = pytest.mark.component

COLLECTION = "sentences"
HANDBOOK = b"""# Greenhouse handbook

## Watering

The kiwi greenhouse is watered at 06:40 by the robot Pollux. Pollux refills its **tank** from the
north cistern, see [the cistern page](https://example.invalid/cistern). The orchid house is misted
by hand every afternoon.

- Tomatoes get drip irrigation twice a day.
- Seedlings are watered from below, never from above.
"""
QUESTION = "When is the kiwi greenhouse watered?"


async def drafted_by(
    store: Store, embedder: Embedder, tmp_path: Path, question: str = QUESTION, **generator: object
) -> tuple[str, list[str]]:
    """The extractive answer to ``question`` and the sentences the model was asked to score."""
    retriever = Retriever(
        RetrieverSettings(model_dir=tmp_path, qdrant_path=tmp_path / "q", query_cache_size=0), embedder, store
    )
    routed = QueryRouted(
        query=Query(request_id="r", gateway_id="g", question=question, collection=COLLECTION), route=Route(tier="fast")
    )
    retrieved = await asyncio.to_thread(retriever.retrieve, routed)
    asked: list[str] = []

    def model(question: str, sentences: Sequence[str]) -> list[float]:
        asked.extend(sentences)
        return [0.5 for _ in sentences]

    async def drop(*_: object) -> None:
        return None

    gen = Generator(GeneratorSettings(metrics_port=0, **generator), None, setup_telemetry("t"), drop)  # type: ignore[arg-type]
    gen.scorer = model
    drafted = await gen.draft(retrieved)
    assert drafted.retrieval.sentence_scores == {}  # the scores stay with the generator
    return drafted.draft.answer, asked


def index(embedder: Embedder, store: Store, tmp_path: Path, **ingest: object) -> None:
    settings = IngestSettings(model_dir=tmp_path, qdrant_path=tmp_path / "q", metrics_port=0, **ingest)  # type: ignore[arg-type]
    request = IngestRequested(
        request_id="seed", document_id="handbook", collection=COLLECTION, source="handbook.md", object_name="-",
        content_hash="v1", size=len(HANDBOOK),
    )  # fmt: skip
    store.ensure_collection(COLLECTION)
    index_document(request, HANDBOOK, embedder, store, settings)


async def test_pooled_vectors_come_from_the_same_forward_pass(model_dir: Path) -> None:
    embedder = await asyncio.to_thread(get_embedder, model_dir)
    texts = ["Plans\nThe Pro plan costs $12 per user per month. Support answers **within a day**.", "Short."]
    units = [
        Units(len("Plans\n"), ["The Pro plan costs $12 per user per month.", "Support answers within a day."]),
        Units(0, []),
    ]
    dense, sparse, pooled = embedder.embed_passages_pooled(texts, units)
    plain_dense, plain_sparse = embedder.embed_passages(texts)
    assert dense == plain_dense
    assert sparse == plain_sparse
    first, second = pooled[0]
    assert first is not None
    assert second is not None
    assert pooled[1] == []
    assert np.linalg.norm(first) == pytest.approx(1.0, abs=1e-5)
    alone = np.asarray(embedder.embed_dense(["The Pro plan costs $12 per user per month."])[0])
    other = np.asarray(embedder.embed_dense(["Support answers within a day."])[0])
    # pooled in context, each is still the closer of the two to its own words embedded alone
    assert float(first @ alone) > float(second @ alone)
    assert float(second @ other) > float(first @ other)


async def test_a_question_is_answered_from_stored_sentence_vectors_without_the_model(
    model_dir: Path, tmp_path: Path
) -> None:
    embedder = await asyncio.to_thread(get_embedder, model_dir)
    store = configured_store(IngestSettings(qdrant_path=tmp_path / "q", metrics_port=0))
    index(embedder, store, tmp_path)
    [chunk] = store.fetch_chunks(
        COLLECTION, [("handbook", p, 0) for p in [store.document_version(COLLECTION, "handbook") or ""]]
    ).values()
    keys, vectors = unpack(chunk)
    assert vectors.shape == (len(keys), 384)
    assert len(keys) == 5

    retriever = Retriever(RetrieverSettings(model_dir=model_dir, qdrant_path=tmp_path / "q"), embedder, store)
    routed = QueryRouted(
        query=Query(request_id="r", gateway_id="g", question=QUESTION, collection=COLLECTION), route=Route(tier="fast")
    )
    retrieval = retriever.retrieve(routed).retrieval
    units = unique_candidates(candidate_sentences(retrieval.passages))
    assert {sentence_key(u.text) for u in units} == set(retrieval.sentence_scores[1])  # the link's URL dropped too
    best = max(units, key=lambda u: retrieval.sentence_scores[1][sentence_key(u.text)])
    assert best.text.startswith("The kiwi greenhouse is watered at 06:40")

    answer, asked = await drafted_by(store, embedder, tmp_path)
    assert asked == []
    assert answer.startswith("The kiwi greenhouse is watered at 06:40")


async def test_without_stored_vectors_the_model_scores_or_words_alone_decide(model_dir: Path, tmp_path: Path) -> None:
    embedder = await asyncio.to_thread(get_embedder, model_dir)
    store = configured_store(IngestSettings(qdrant_path=tmp_path / "q", metrics_port=0))
    index(embedder, store, tmp_path, sentence_vectors=False)  # as an index from before sentence vectors

    question = "Which plants are watered, and how?"  # several sentences within reach by words
    answer, asked = await drafted_by(store, embedder, tmp_path, question)
    assert len(asked) > 1
    assert "[1]" in answer
    answer, asked = await drafted_by(store, embedder, tmp_path, question, sentence_fallback="words")
    assert asked == []
    assert "[1]" in answer


async def test_stored_scores_can_be_ignored_by_setting(model_dir: Path, tmp_path: Path) -> None:
    embedder = await asyncio.to_thread(get_embedder, model_dir)
    store = configured_store(IngestSettings(qdrant_path=tmp_path / "q", metrics_port=0))
    index(embedder, store, tmp_path)
    question = "Which plants are watered, and how?"
    _, asked = await drafted_by(store, embedder, tmp_path, question)
    assert asked == []
    _, asked = await drafted_by(store, embedder, tmp_path, question, stored_sentence_scores=False)
    assert len(asked) > 1  # the model ranks, as before sentence vectors
