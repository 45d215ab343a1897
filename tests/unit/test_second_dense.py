"""The second dense model (``RAG_SECOND_DENSE``): its folder, its settings, its vectors and the
weighted score fusion of three rankings, as a user of the settings and the passages sees them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from rag_common.embedding import SECOND_DIM, SECOND_QUERY_PREFIX, ModelFolderError, SecondEmbedder
from rag_common.vectors import Hit
from rag_retriever.app import Retriever
from rag_retriever.ranking import fuse_sides, weighted_dbsf
from rag_retriever.settings import RetrieverSettings

pytestmark = pytest.mark.unit


def test_a_missing_folder_names_the_setting_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelFolderError) as caught:
        SecondEmbedder(tmp_path)
    message = str(caught.value)
    assert "RAG_SECOND_MODEL_DIR" in message and "model.onnx" in message
    assert "make model" in message and "RAG_SECOND_DENSE=false" in message


def test_the_retriever_stops_at_start_up_without_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_SECOND_DENSE", "true")
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path))
    settings = RetrieverSettings()
    assert settings.resolved_second_model_dir == tmp_path / "models" / "bge-small-en-v1.5-int8"
    embedder: Any = SimpleNamespace(embed_query=lambda text: ([], None))
    with pytest.raises(ModelFolderError, match="RAG_SECOND_MODEL_DIR"):
        Retriever(settings, embedder, store=None)  # type: ignore[arg-type]  # fails before the store is used
    # off, or with its side weighed 0, the folder is never looked at
    Retriever(RetrieverSettings(second_dense=False), embedder, store=None)  # type: ignore[arg-type]
    Retriever(RetrieverSettings(second_dense_weight=0), embedder, store=None)  # type: ignore[arg-type]


def test_it_is_off_by_default_with_the_measured_weight_and_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RAG_SECOND_DENSE", "RAG_RETRIEVER_SECOND_DENSE_WEIGHT", "RAG_RETRIEVER_SECOND_PREFETCH_LIMIT"):
        monkeypatch.delenv(name, raising=False)
    settings = RetrieverSettings()
    assert (settings.second_dense, settings.second_dense_weight, settings.second_prefetch_limit) == (False, 0.4, 60)


def test_it_needs_score_fusion(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_SECOND_DENSE", "true")
    monkeypatch.setenv("RAG_RETRIEVER_FUSION", "rrf")
    with pytest.raises(ValidationError, match="RAG_RETRIEVER_FUSION=dbsf"):
        RetrieverSettings()


def test_the_model_reads_questions_with_its_instruction_and_gives_unit_vectors(second_dir: Path) -> None:
    model = SecondEmbedder(second_dir, workers=1)
    passages = [
        "The kiwi greenhouse is watered at 06:40 by the robot Pollux.",
        "Invoices are sent on the first day of each month.",
    ]
    vectors = np.array(model.embed_passages(passages))
    assert vectors.shape == (2, SECOND_DIM)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0, 1.0], abs=1e-5)
    question = "When is the greenhouse watered?"
    asked = np.array(model.embed_query(question))
    assert asked @ vectors[0] > asked @ vectors[1]
    # the instruction goes before questions only: a passage of the same words is another vector
    assert np.array(model.embed_passages([SECOND_QUERY_PREFIX + question])[0]) == pytest.approx(asked, abs=1e-5)
    assert not np.allclose(model.embed_passages([question])[0], asked, atol=1e-3)
    assert model.embed_passages([]) == []


def hit(document: str, score: float, index: int = 0) -> Hit:
    payload: dict[str, Any] = {"document_id": document, "content_hash": "v1", "chunk_index": index, "text": document}
    return Hit(score=score, similarity=0.5, payload=payload)


MINILM = [hit("a", 0.91), hit("b", 0.84), hit("c", 0.80), hit("d", 0.62)]
SECOND = [hit("e", 0.77), hit("d", 0.76), hit("b", 0.70)]
BM25 = [hit("c", 12.0), hit("e", 9.5), hit("a", 3.1)]


def order(hits: list[Hit]) -> list[str]:
    return [str(h.payload["document_id"]) for h in hits]


def test_weight_zero_gives_the_two_sided_order() -> None:
    two = fuse_sides([MINILM, BM25], [1.0, 1.0], 10)
    assert order(fuse_sides([MINILM, SECOND, BM25], [1.0, 0.0, 1.0], 10)) == order(two)
    assert [h.score for h in fuse_sides([MINILM, SECOND, BM25], [1.0, 0.0, 1.0], 10)] == pytest.approx(
        [h.score for h in two]
    )


def test_the_second_models_weight_moves_what_it_alone_ranks_high() -> None:
    plain = order(fuse_sides([MINILM, BM25], [1.0, 1.0], 10))
    light = order(fuse_sides([MINILM, SECOND, BM25], [1.0, 0.4, 1.0], 10))
    heavy = order(fuse_sides([MINILM, SECOND, BM25], [1.0, 3.0, 1.0], 10))
    assert plain.index("e") > plain.index("a")
    assert heavy[0] == "e"  # found first by the second model, weighed heavily
    assert light.index("e") <= plain.index("e") and light.index("e") >= heavy.index("e")


def test_fused_hits_keep_their_payload_and_similarity_and_the_limit() -> None:
    fused = fuse_sides([MINILM, SECOND, BM25], [1.0, 0.4, 1.0], 3)
    assert len(fused) == 3
    assert all(h.similarity == 0.5 and h.payload["text"] == h.payload["document_id"] for h in fused)
    scores = dict(
        weighted_dbsf([[(order([h])[0], h.score) for h in side] for side in (MINILM, SECOND, BM25)], [1, 0.4, 1])
    )
    assert [h.score for h in fused] == pytest.approx([scores[k] for k in order(fused)])


def test_two_versions_of_a_chunk_are_two_candidates() -> None:
    old, new = hit("a", 0.9), Hit(score=0.8, similarity=0.5, payload={**hit("a", 0).payload, "content_hash": "v2"})
    assert len(fuse_sides([[old, new]], [1.0], 10)) == 2
