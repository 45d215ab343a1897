from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from rag_common.settings import StoreSettings


class IngestSettings(StoreSettings):
    """Ingest settings; its own variables start with ``RAG_INGEST_``."""

    model_config = SettingsConfigDict(env_prefix="RAG_INGEST_", extra="ignore", populate_by_name=True)

    chunk_max_tokens: int = Field(200, ge=32, le=256, description="word-piece tokens per chunk (MiniLM reads 256)")
    chunk_overlap_tokens: int = Field(40, ge=0, le=128)
    chunk_min_tokens: int = Field(24, ge=0, le=128, description="smaller chunks merge with a neighbour")
    ack_wait_s: float = Field(300.0, gt=0, description="time one document may take before redelivery")
    concurrency: int = Field(2, ge=1, le=64, description="documents one replica indexes at once")
    metrics_port: int = 9101
