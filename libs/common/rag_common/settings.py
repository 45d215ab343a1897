"""Settings bases shared by every service.

Infrastructure settings (where NATS and Qdrant are) use plain, shared names such as ``NATS_URL``;
each service's own settings carry its prefix (``RAG_ROUTER_``, ``RAG_GATEWAY_``...).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _env(name: str) -> AliasChoices:
    return AliasChoices(name)


class ServiceSettings(BaseSettings):
    """What every service needs: NATS, JetStream sizing, metrics and logs."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    nats_url: str = Field("nats://127.0.0.1:4222", validation_alias=_env("NATS_URL"))
    data_dir: Path = Field(Path("data"), validation_alias=_env("RAG_DATA_DIR"))
    js_replicas: int = Field(1, ge=1, le=5, validation_alias=_env("RAG_JS_REPLICAS"))
    max_deliver: int = Field(3, ge=1, le=20, validation_alias=_env("RAG_MAX_DELIVER"))
    query_ack_wait_s: float = Field(30.0, gt=0, validation_alias=_env("RAG_QUERY_ACK_WAIT_S"))
    metrics_host: str = Field("127.0.0.1", validation_alias=_env("RAG_METRICS_HOST"))
    log_level: str = Field("INFO", validation_alias=_env("RAG_LOG_LEVEL"))
    concurrency: int = Field(8, ge=1, le=256, description="messages one replica handles at once")

    @field_validator("nats_url")
    @classmethod
    def _nats_scheme(cls, value: str) -> str:
        if not value.startswith(("nats://", "tls://", "ws://", "wss://")):
            raise ValueError(f"NATS_URL must look like nats://host:4222, got {value!r}")
        return value


class StoreSettings(ServiceSettings):
    """For services that embed text or touch the vector store (ingest, retriever)."""

    qdrant_url: str | None = Field(None, validation_alias=_env("QDRANT_URL"))
    qdrant_api_key: str | None = Field(None, validation_alias=_env("QDRANT_API_KEY"))
    qdrant_path: Path | None = Field(None, validation_alias=_env("QDRANT_PATH"))
    model_dir: Path | None = Field(None, validation_alias=_env("RAG_MODEL_DIR"))

    @property
    def resolved_qdrant_path(self) -> Path:
        return self.qdrant_path or self.data_dir / "qdrant"

    @property
    def resolved_model_dir(self) -> Path:
        return self.model_dir or self.data_dir / "models" / "all-MiniLM-L6-v2-int8"
