"""The fusion of several rankings by score (``benchmarks.ensemble``, now the
product's ``rag_retriever.ranking.weighted_dbsf`` for ``RAG_SECOND_DENSE``): with every weight 1 it
must be the product's fusion (Qdrant's DBSF), or its figures would not compare."""

from __future__ import annotations

import numpy as np
import pytest
from qdrant_client import models
from qdrant_client.hybrid.fusion import distribution_based_score_fusion

from benchmarks.ensemble import Side, sides_from, split_vector
from benchmarks.late_interaction import max_sim
from rag_retriever.ranking import weighted_dbsf

pytestmark = pytest.mark.unit

DENSE = [("a", 0.91), ("b", 0.84), ("c", 0.80), ("d", 0.62)]
BM25 = [("c", 12.0), ("e", 9.5), ("a", 3.1)]
SECOND_DENSE = [("b", 0.77), ("e", 0.74), ("a", 0.70)]


def qdrant_dbsf(sides: list[list[tuple[str, float]]]) -> list[tuple[str, float]]:
    responses = [[models.ScoredPoint(id=i, version=0, score=s) for i, s in side] for side in sides]
    fused = distribution_based_score_fusion(responses, limit=100)
    return [(str(p.id), p.score) for p in fused]


def uuid_of(key: str) -> str:
    """Qdrant's points need UUID (or integer) ids."""
    return f"00000000-0000-0000-0000-00000000000{ord(key) - ord('a')}"


def test_equal_weights_are_qdrants_dbsf_order_and_scores() -> None:
    for sides in ([DENSE, BM25], [DENSE, SECOND_DENSE, BM25]):
        as_uuids = [[(uuid_of(k), s) for k, s in side] for side in sides]
        expected = qdrant_dbsf(as_uuids)
        got = weighted_dbsf(as_uuids, [1.0] * len(sides))
        assert [k for k, _ in got] == [k for k, _ in expected]
        assert [s for _, s in got] == pytest.approx([s for _, s in expected])


def test_a_weight_scales_that_sides_share_only() -> None:
    plain = dict(weighted_dbsf([DENSE, BM25], [1.0, 1.0]))
    heavier = dict(weighted_dbsf([DENSE, BM25], [1.0, 2.0]))
    assert heavier["d"] == pytest.approx(plain["d"])  # only the dense side found d
    assert heavier["e"] == pytest.approx(2 * plain["e"])  # only BM25 found e
    assert heavier["c"] > plain["c"]


def test_a_weight_can_change_the_order() -> None:
    assert weighted_dbsf([DENSE, BM25], [1.0, 0.0])[0][0] == "a"
    assert weighted_dbsf([DENSE, BM25], [0.0, 1.0])[0][0] == "c"


def test_one_candidate_or_equal_scores_count_half() -> None:
    assert weighted_dbsf([[("x", 3.0)]], [2.0]) == [("x", 1.0)]
    assert dict(weighted_dbsf([[("x", 0.5), ("y", 0.5)]], [1.0])) == {"x": 0.5, "y": 0.5}


def test_empty_sides_are_skipped_and_weights_must_match() -> None:
    assert weighted_dbsf([[], BM25], [1.0, 1.0])[0][0] == "c"
    with pytest.raises(ValueError, match="2 sides but 1 weights"):
        weighted_dbsf([DENSE, BM25], [1.0])


def test_split_vector_undoes_the_concatenation() -> None:
    assert split_vector([1.0, 2.0, 3.0, 4.0, 5.0], [2, 3]) == [[1.0, 2.0], [3.0, 4.0, 5.0]]
    with pytest.raises(ValueError, match="2\\+2"):
        split_vector([1.0, 2.0, 3.0], [2, 2])


def test_sides_default_to_weight_one_and_the_products_candidates_and_drop_weight_zero() -> None:
    assert sides_from({}, ["minilm", "bge"], 60, 50) == [
        Side("minilm", 1.0, 60),
        Side("bge", 1.0, 60),
        Side("bm25", 1.0, 50),
    ]
    assert sides_from({"w_minilm": "0", "n_bm25": "80", "w_bge": "0.5"}, ["minilm", "bge"], 60, 50) == [
        Side("bge", 0.5, 60),
        Side("bm25", 1.0, 80),
    ]


def test_max_sim_averages_each_question_tokens_best_match() -> None:
    query = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    passage = np.array([[1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    assert max_sim(query, passage) == pytest.approx((1.0 + 0.8) / 2)
    assert max_sim(query, np.zeros((0, 2), dtype=np.float32)) == 0.0
