from __future__ import annotations

from pydantic_settings import SettingsConfigDict

from rag_common.settings import ServiceSettings


class EvaluatorSettings(ServiceSettings):
    """Evaluator settings; variables start with ``RAG_EVALUATOR_``."""

    model_config = SettingsConfigDict(env_prefix="RAG_EVALUATOR_", extra="ignore", populate_by_name=True)

    metrics_port: int = 9105
