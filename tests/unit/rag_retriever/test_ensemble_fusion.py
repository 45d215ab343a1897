"""The fusion of several rankings by score (``rag_retriever.ranking.weighted_dbsf``, for
``RAG_SECOND_DENSE``): with every weight 1 it must be Qdrant's DBSF, the fusion of the default
search, or turning the second model on would change more than its own side's weight."""

from __future__ import annotations

import pytest
from qdrant_client import models
from qdrant_client.hybrid.fusion import distribution_based_score_fusion

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
