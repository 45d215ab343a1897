from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from rag_common.config.settings import ServiceSettings


class RouterSettings(ServiceSettings):
    """Router settings; environment variables start with ``RAG_ROUTER_``."""

    model_config = SettingsConfigDict(env_prefix="RAG_ROUTER_", extra="ignore", populate_by_name=True)

    threshold: int = Field(4, ge=1, description="score at or above which a question goes to the strong tier")
    metrics_port: int = 9102
