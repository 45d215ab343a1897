"""The second dense model (``RAG_SECOND_DENSE``): its folder, its settings, its vectors and the
weighted score fusion of three rankings, as a user of the settings and the passages sees them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from rag_common.store.embedding import SECOND_DIM, SECOND_QUERY_PREFIX, ModelFolderError, SecondEmbedder
from rag_retriever.ranking import weighted_dbsf
from rag_retriever.search import Retriever
from rag_retriever.settings import RetrieverSettings

pytestmark = pytest.mark.unit


def test_a_missing_folder_names_the_setting_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelFolderError) as caught:
        SecondEmbedder(tmp_path)
    message = str(caught.value)
    assert "RAG_SECOND_MODEL_DIR" in message
    assert "model.onnx" in message
    assert "make model" in message
    assert "RAG_SECOND_DENSE=false" in message


def test_the_retriever_stops_at_start_up_without_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_SECOND_DENSE", "true")
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("RAG_SECOND_MODEL_DIR", raising=False)
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


MINILM = [("a", 0.91), ("b", 0.84), ("c", 0.80), ("d", 0.62)]
SECOND = [("e", 0.77), ("d", 0.76), ("f", 0.70)]  # f: found by the second model alone
BM25 = [("c", 12.0), ("e", 9.5), ("a", 3.1)]


def order(fused: list[tuple[str, float]]) -> list[str]:
    return [key for key, score in fused if score > 0]


def test_weight_zero_adds_nothing_to_the_two_sided_fusion() -> None:
    two = dict(weighted_dbsf([MINILM, BM25], [1.0, 1.0]))
    three = dict(weighted_dbsf([MINILM, SECOND, BM25], [1.0, 0.0, 1.0]))
    assert {k: v for k, v in three.items() if v > 0} == pytest.approx(two)
    assert three["f"] == 0.0  # the retriever does not even search a side of weight 0


def test_the_second_models_weight_moves_what_it_ranks_high() -> None:
    plain = order(weighted_dbsf([MINILM, BM25], [1.0, 1.0]))
    light = order(weighted_dbsf([MINILM, SECOND, BM25], [1.0, 0.4, 1.0]))
    heavy = order(weighted_dbsf([MINILM, SECOND, BM25], [1.0, 3.0, 1.0]))
    assert "f" not in plain
    assert heavy[0] == "e"
    assert light.index("f") == len(light) - 1  # at 0.4 its own finds come last
    assert heavy.index("f") < light.index("f")
    assert plain.index("e") >= light.index("e") >= heavy.index("e")
