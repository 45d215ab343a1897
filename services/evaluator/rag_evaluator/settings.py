from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from rag_common.config.settings import ServiceSettings


class EvaluatorSettings(ServiceSettings):
    """Evaluator settings; variables start with ``RAG_EVALUATOR_``."""

    model_config = SettingsConfigDict(env_prefix="RAG_EVALUATOR_", extra="ignore", populate_by_name=True)

    model_dir: Path | None = Field(
        None,
        validation_alias=AliasChoices("RAG_MODEL_DIR"),
        description="embedding model folder for the assessment near-duplicate check; default "
        "<data_dir>/models/all-MiniLM-L6-v2-int8",
    )
    near_duplicate_cosine: float = Field(
        0.90, ge=0, le=1, description="assessments: two question stems above this MiniLM cosine are near-duplicates"
    )
    metrics_port: int = 9105

    @property
    def resolved_model_dir(self) -> Path:
        return self.model_dir or self.data_dir / "models" / "all-MiniLM-L6-v2-int8"
