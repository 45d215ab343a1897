from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from rag_common.messages import new_id
from rag_common.settings import ServiceSettings


class GatewaySettings(ServiceSettings):
    """Gateway settings; variables start with ``RAG_GATEWAY_``."""

    model_config = SettingsConfigDict(env_prefix="RAG_GATEWAY_", extra="ignore", populate_by_name=True)

    host: str = Field("127.0.0.1", description="bind address (0.0.0.0 in containers)")
    port: int = Field(8000, ge=0, le=65535)
    gateway_id: str = Field(default_factory=lambda: new_id()[:12], description="this replica's answer-subject key")
    max_upload_bytes: int = Field(20 * 1024 * 1024, ge=1)
    query_timeout_s: float = Field(60.0, gt=0, description="give up on an answer after this long (504)")
    ready_timeout_s: float = Field(1.0, gt=0, description="how long /readyz waits for each service")
    session_max_turns: int = Field(10, ge=1, le=100, description="turns kept per conversation (session_id)")
    session_ttl_s: float = Field(86400.0, gt=0, description="a conversation idle this long is forgotten")
