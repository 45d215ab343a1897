from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from rag_common.settings import StoreSettings

RERANKER_FOLDER = "ms-marco-MiniLM-L-12-v2-int8"


class RetrieverSettings(StoreSettings):
    """Retriever settings; its own variables start with ``RAG_RETRIEVER_``."""

    model_config = SettingsConfigDict(env_prefix="RAG_RETRIEVER_", extra="ignore", populate_by_name=True)

    top_k: int = Field(5, ge=1, le=50, description="passages given to the generator")
    candidates: int = Field(30, ge=1, le=200, description="fused hits considered before section diversity")
    query_cache_size: int = Field(
        1024, ge=0, le=1_000_000, description="questions whose embeddings are kept (a repeat skips the model); 0: off"
    )
    diversify_sections: bool = Field(True, description="one chunk per section first, then the rest")
    mmr: bool = Field(False, description="pick the top_k by maximal marginal relevance instead of section diversity")
    mmr_lambda: float = Field(0.7, ge=0, le=1, description="MMR: weight of relevance against redundancy")
    boilerplate_weight: float = Field(
        1.0, ge=0, le=1, description="fused-score factor for 'Next steps'/link-only chunks (1 = no down-weighting)"
    )
    named_source_first: bool = Field(
        True, description="a question that names a document by its title gets that document's passages first"
    )
    split_questions: bool = Field(False, description="search each part of a two-part question too and fuse")
    split_mode: Literal["fuse", "cover"] = Field(
        "fuse",
        description="split questions: fuse the rankings (fuse) or keep the whole question's and add each "
        "part's best section at rank 3 when missing (cover)",
    )
    keyword_sparse: bool = Field(True, description="BM25 side searches the question's keywords only")
    reranker: Literal["off", "lexical", "heading", "cross-encoder", "learned"] = Field(
        "off",
        description="reorder the fused candidates: lexical = heading and text overlap with the question, "
        "heading = how much of the chunk's own heading the question covers, cross-encoder = "
        "ms-marco-MiniLM-L-12-v2 reads the question with each candidate (local folder, `make model`), "
        "learned = a linear model over the candidates' scores, ranks, overlaps and file evidence",
    )
    file_evidence_weight: float = Field(
        0.0,
        ge=0,
        le=5,
        description="document-level evidence: add this times the file's share of the candidates' evidence to "
        "each candidate's relevance (0 = off)",
    )
    file_second_section: bool = Field(
        False,
        description="when the first three passages hold one section of the first passage's file, bring its best "
        "other candidate section in at rank 3",
    )
    reranker_model_dir: Path | None = Field(
        None,
        description=f"cross-encoder folder (model.onnx, tokenizer.json); default <data_dir>/models/{RERANKER_FOLDER}",
    )
    rerank_candidates: int = Field(10, ge=1, le=200, description="cross-encoder: the first fused candidates it reads")
    rerank_max_tokens: int = Field(
        320, ge=32, le=512, description="cross-encoder: word pieces of question + passage it reads (the passage is cut)"
    )
    rerank_fused_weight: float = Field(
        1.0, ge=0, le=5, description="cross-encoder: weight of the fused score (0..1 over those read) beside its own"
    )
    rerank_heading_weight: float = Field(0.5, ge=0, le=5, description="lexical reranker: weight of heading overlap")
    rerank_text_weight: float = Field(0.3, ge=0, le=5, description="lexical reranker: weight of text overlap")
    sentence_scores: bool = Field(
        True,
        description="score the quotable sentences of the passages against the question with the vectors ingest "
        "stored for them, and send the scores to the generator (it then needs no model run)",
    )
    neighbours: int = Field(
        1, ge=0, le=3, description="join this many neighbouring chunks of the same section on each side of a passage"
    )
    context_budget_tokens: int = Field(
        1200,
        ge=0,
        le=100_000,
        description="tokens (about 4 characters each) all passages together may cost the generator (0 = no limit)",
    )
    section_units: bool = Field(
        False, description="rank sections by all their candidate chunks (parent/child); the best chunk is the evidence"
    )
    section_child_weight: float = Field(
        0.5, ge=0, le=2, description="section units: weight of a section's further chunks after its best one"
    )
    usage_penalty: float = Field(
        1.0, ge=0, le=1, description="score factor per earlier turn of the session that cited the same source (1 = off)"
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
    rrf_k: int = Field(60, ge=1, description="reciprocal rank fusion constant (60 is the usual choice)")
    min_similarity: float = Field(
        0.30, ge=-1, le=1, description="refuse when the best passage's dense cosine to the question is below this"
    )
    escalate_sources: int = Field(
        3, ge=2, description="escalate fast→strong when this many top passages all come from different documents"
    )
    escalate_margin: float = Field(
        0.05, ge=0, le=1, description="passages count towards escalation when this close to the best similarity"
    )
    calibrate: bool = Field(True, description="derive each collection's threshold from off-topic probe questions")
    calibration_margin: float = Field(
        0.03, ge=0, le=1, description="threshold = 90th percentile of off-topic scores in the collection + this"
    )
    max_threshold: float = Field(0.55, ge=0, le=1, description="a calibrated threshold never exceeds this")
    lexical_margin: float = Field(
        0.12, ge=0, le=1, description="just above the threshold, passages must mention the question's salient words"
    )
    min_coverage: float = Field(0.34, ge=0, le=1, description="share of salient words the passages must mention")
    confident_margin: float = Field(
        0.06, ge=0, le=1, description="answers closer than this to the threshold are low_confidence"
    )
    rewrite_model: str | None = Field(
        None, description="LiteLLM model string that rewrites follow-ups; unset = rules (no model call)"
    )
    rewrite_api_base: str | None = Field(None, description="OpenAI-compatible server of the rewrite model")
    rewrite_api_key: SecretStr | None = Field(None, description="key of the rewrite model (else provider env vars)")
    rewrite_timeout_s: float = Field(10.0, gt=0, description="seconds the rewrite model may take (then rules)")
    metrics_port: int = 9103

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
