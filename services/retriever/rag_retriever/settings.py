from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from rag_common.settings import StoreSettings


class RetrieverSettings(StoreSettings):
    """Retriever settings; its own variables start with ``RAG_RETRIEVER_``."""

    model_config = SettingsConfigDict(env_prefix="RAG_RETRIEVER_", extra="ignore", populate_by_name=True)

    top_k: int = Field(5, ge=1, le=50, description="passages given to the generator")
    candidates: int = Field(15, ge=1, le=200, description="fused hits considered before section diversity")
    diversify_sections: bool = Field(True, description="one chunk per section first, then the rest")
    prefetch_limit: int = Field(30, ge=1, le=500, description="candidates per retriever before fusion")
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
    metrics_port: int = 9103
