"""The answer cache's default threshold on the sample corpus's pairs, with the real MiniLM model:
no near-miss (another plan, number, action) is served, the rephrasings measured above it are."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.cache import Pair, load_pairs, score_pairs, threshold_figures
from rag_common.store.answer_cache import DEFAULT_MIN_COSINE
from rag_common.store.embedding import get_embedder

pytestmark = pytest.mark.component


def test_no_near_miss_of_the_sample_pairs_is_served_at_the_default_threshold(model_dir: Path) -> None:
    embedder = get_embedder(model_dir)
    pairs = load_pairs()
    figures = threshold_figures(score_pairs(embedder, pairs), DEFAULT_MIN_COSINE)
    assert figures["near_misses"] >= 20
    assert figures["rephrasings"] >= 15
    assert figures["near_miss_hits"] == 0, [p for p in figures["pairs"] if p["hit"] and not p["same"]]
    # The closest near-miss only the cosine stops (the anchors and the sense agree), and by how much.
    assert figures["near_miss_max_cosine_agreeing"] < DEFAULT_MIN_COSINE
    assert figures["rephrasing_hits"] >= figures["rephrasings"] // 2


def test_the_plan_question_misses_and_its_rephrasing_hits(model_dir: Path) -> None:
    embedder = get_embedder(model_dir)
    pro, business, rephrased = score_pairs(
        embedder,
        [
            Pair("How much does the Pro plan cost?", "How much does the Business plan cost?", same=False),
            Pair("How much does the Business plan cost?", "How much does the Pro plan cost?", same=False),
            Pair("How much does the Business plan cost?", "What does the Business plan cost?", same=True),
        ],
    )
    assert not pro.hit(DEFAULT_MIN_COSINE)
    assert not business.hit(DEFAULT_MIN_COSINE)
    assert pro.cosine < 0.8  # far below the threshold even before the anchors ("Pro" / "Business")
    assert rephrased.hit(DEFAULT_MIN_COSINE)
    assert rephrased.cosine > 0.97
