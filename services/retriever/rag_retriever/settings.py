from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from rag_common.config.settings import StoreSettings
from rag_common.store.answer_cache import AnswerCacheSettings

RERANKER_FOLDER = "ms-marco-MiniLM-L-12-v2-int8"

# Ranking options measured worse than the default and taken out of the service
# (docs/decisions/0300-decisions-in-force.md); relevance knobs now fixed constants of rag_retriever.search.
REMOVED = tuple(
    f"RAG_RETRIEVER_{name}"
    for name in (
        "MMR MMR_LAMBDA BOILERPLATE_WEIGHT SPLIT_QUESTIONS SPLIT_MODE FILE_EVIDENCE_WEIGHT FILE_SECOND_SECTION "
        "SECTION_UNITS SECTION_CHILD_WEIGHT USAGE_PENALTY RERANK_HEADING_WEIGHT RERANK_TEXT_WEIGHT "
        "RERANK_MAX_TOKENS RERANK_FUSED_WEIGHT NAMED_SOURCE_FIRST KEYWORD_SPARSE DIVERSIFY_SECTIONS "
        "SENTENCE_SCORES RRF_K CALIBRATION_MARGIN MAX_THRESHOLD LEXICAL_MARGIN MIN_COVERAGE CONFIDENT_MARGIN "
        "ESCALATE_MARGIN"
    ).split()
)


class RetrieverSettings(StoreSettings, AnswerCacheSettings):
    """Retriever settings; its own variables start with ``RAG_RETRIEVER_``."""

    model_config = SettingsConfigDict(env_prefix="RAG_RETRIEVER_", extra="ignore", populate_by_name=True)

    top_k: int = Field(5, ge=1, le=50, description="passages given to the generator")
    candidates: int = Field(30, ge=1, le=200, description="fused hits considered before section diversity")
    query_cache_size: int = Field(
        1024, ge=0, le=1_000_000, description="questions whose embeddings are kept (a repeat skips the model); 0: off"
    )
    reranker: Literal["off", "cross-encoder"] = Field(
        "off",
        description="reorder the first fused candidates: cross-encoder = ms-marco-MiniLM-L-12-v2 reads the question "
        "with each candidate (local folder, `make model`)",
    )
    reranker_model_dir: Path | None = Field(
        None,
        description=f"cross-encoder folder (model.onnx, tokenizer.json); default <data_dir>/models/{RERANKER_FOLDER}",
    )
    rerank_candidates: int = Field(10, ge=1, le=200, description="cross-encoder: the first fused candidates it reads")
    neighbours: int = Field(
        1, ge=0, le=3, description="join this many neighbouring chunks of the same section on each side of a passage"
    )
    context_budget_tokens: int = Field(
        1200,
        ge=0,
        le=100_000,
        description="tokens (about 4 characters each) all passages together may cost the generator (0 = no limit)",
    )
    dense_weight: float = Field(1.0, ge=0, le=10, description="weight of the dense ranking in the fusion")
    sparse_weight: float = Field(1.0, ge=0, le=10, description="weight of the BM25 ranking in the fusion")
    fusion: Literal["rrf", "dbsf"] = Field(
        "dbsf", description="fuse dense and BM25 by rank (rrf) or by normalised score (dbsf, no weights)"
    )
    prefetch_limit: int = Field(60, ge=1, le=500, description="dense candidates before fusion")
    sparse_prefetch_limit: int = Field(50, ge=1, le=500, description="BM25 candidates before fusion")
    second_dense_weight: float = Field(
        0.4,
        ge=0,
        le=10,
        description="with RAG_SECOND_DENSE: weight of the second dense model's ranking in the weighted DBSF, beside "
        "MiniLM's (dense_weight) and BM25's (sparse_weight); 0 leaves it out (nor is the question embedded with it)",
    )
    second_prefetch_limit: int = Field(
        60, ge=1, le=500, description="with RAG_SECOND_DENSE: the second dense model's candidates before fusion"
    )
    min_similarity: float = Field(
        0.30, ge=-1, le=1, description="refuse when the best passage's dense cosine to the question is below this"
    )
    escalate_sources: int = Field(
        3, ge=2, description="escalate fast→strong when this many top passages all come from different documents"
    )
    calibrate: bool = Field(True, description="derive each collection's threshold from off-topic probe questions")
    rewrite_model: str | None = Field(
        None, description="LiteLLM model string that rewrites follow-ups; unset = rules (no model call)"
    )
    rewrite_api_base: str | None = Field(None, description="OpenAI-compatible server of the rewrite model")
    rewrite_api_key: SecretStr | None = Field(None, description="key of the rewrite model (else provider env vars)")
    rewrite_timeout_s: float = Field(10.0, gt=0, description="seconds the rewrite model may take (then rules)")
    metrics_port: int = 9103

    @model_validator(mode="after")
    def _no_removed_options(self) -> RetrieverSettings:
        found = [name for name in REMOVED if name in os.environ]
        if found:
            raise ValueError(
                f"{', '.join(found)}: no longer a setting (measured worse, or fixed); unset it. "
                "What left and why: docs/decisions/0300-decisions-in-force.md"
            )
        return self

    @model_validator(mode="after")
    def _second_dense_fuses_scores(self) -> RetrieverSettings:
        if self.second_dense and self.fusion != "dbsf":
            raise ValueError(
                "RAG_SECOND_DENSE=true fuses its three rankings by weighted score fusion only: "
                "set RAG_RETRIEVER_FUSION=dbsf, or RAG_SECOND_DENSE=false"
            )
        return self

    @property
    def resolved_reranker_model_dir(self) -> Path:
        return self.reranker_model_dir or self.data_dir / "models" / RERANKER_FOLDER


class AssessmentRecipeSettings(BaseSettings):
    """The published retrieval recipe for assessment questions (``rag_retriever.assessment``): each
    step's constant. Read by the retriever beside its own settings; variables start with
    ``RAG_RETRIEVER_ASSESSMENT_``."""

    model_config = SettingsConfigDict(env_prefix="RAG_RETRIEVER_ASSESSMENT_", extra="ignore")

    rrf_k: int = Field(60, ge=1, description="assessments: reciprocal rank fusion constant")
    candidates: int = Field(12, ge=1, le=100, description="assessments: fused candidates per question")
    neighbours: int = Field(1, ge=0, le=3, description="assessments: chunk index ± this joined")
    budget_tokens: int = Field(
        2000, ge=50, le=100_000, description="assessments: token budget of one question's candidates"
    )
    tokens_per_word: float = Field(
        1.3, gt=0, le=4, description="assessments: tokens per word in the budget (words × 1.3)"
    )
    usage_penalty: float = Field(
        0.85, ge=0, le=1, description="assessments: score × this ^ times the chunk was used by earlier questions"
    )
    mmr_lambda: float = Field(0.7, ge=0, le=1, description="assessments: MMR relevance weight")
    passages: int = Field(3, ge=1, le=10, description="assessments: passages picked per question")
    scan_limit: int = Field(
        20_000, ge=100, le=1_000_000, description="assessments: chunks read to find units, topics and foils"
    )
    foils: int = Field(
        150, ge=0, le=1000, description="assessments: chunks sampled from the collection for distractor terms"
    )
    foil_chars: int = Field(700, ge=100, le=5000, description="assessments: characters kept per foil")
