"""Unit tests for the retriever's search as one list of named steps, built once from the settings."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import ValidationError

from rag_common.config.settings import StoreSettings
from rag_common.store.answer_cache import AnswerCacheSettings
from rag_retriever.search import Retriever, describe
from rag_retriever.settings import REMOVED, RetrieverSettings

pytestmark = pytest.mark.unit

DEFAULT = (
    "embed → search (dense + BM25 keywords, dbsf) → named source first → one per section (top 5 of 30) → "
    "budget (1200 tokens) → neighbours (±1) → relevance (calibrated threshold) → sentence scores"
)


class NoModel:
    def embed_query(self, text: str) -> Any:
        raise AssertionError("building the steps runs no model")


def retriever(**overrides: Any) -> Retriever:
    settings = RetrieverSettings(second_dense=False, **overrides)  # whatever the environment says
    return Retriever(settings, NoModel(), store=None)  # type: ignore[arg-type]


def test_the_default_search_is_logged_once_as_its_steps(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="rag.retriever"):
        built = retriever()
    assert describe(built.steps) == DEFAULT
    assert [r.getMessage() for r in caplog.records if "steps" in r.getMessage()] == [f"retriever steps: {DEFAULT}"]


def test_a_step_the_settings_turn_off_is_not_in_the_list() -> None:
    built = retriever(neighbours=0, context_budget_tokens=0, calibrate=False, min_similarity=0.25, fusion="rrf")
    assert describe(built.steps) == (
        "embed → search (dense + BM25 keywords, rrf) → named source first → one per section (top 5 of 30) → "
        "relevance (threshold 0.25) → sentence scores"
    )


def test_the_retriever_has_at_most_25_settings_of_its_own() -> None:
    shared = StoreSettings.model_fields.keys() | AnswerCacheSettings.model_fields.keys()  # read by other services too
    own = [name for name in RetrieverSettings.model_fields if name not in shared]
    assert len(own) <= 25, own


@pytest.mark.parametrize("name", ["RAG_RETRIEVER_MMR", "RAG_RETRIEVER_USAGE_PENALTY", "RAG_RETRIEVER_LEXICAL_MARGIN"])
def test_a_removed_setting_stops_the_service_and_says_where_it_went(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert name in REMOVED
    monkeypatch.setenv(name, "0.5")
    with pytest.raises(ValidationError, match=f"{name}: no longer a setting.*0300-decisions-in-force"):
        RetrieverSettings()


def test_a_measured_worse_reranker_is_refused_by_the_settings() -> None:
    with pytest.raises(ValidationError, match="cross-encoder"):
        RetrieverSettings(reranker="lexical")
