from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from rag_common.config.settings import ServiceSettings


class GeneratorSettings(ServiceSettings):
    """Generator settings; variables start with ``RAG_GENERATOR_``.

    With no model configured (the default) answers are extractive and nothing leaves the machine.
    """

    model_config = SettingsConfigDict(env_prefix="RAG_GENERATOR_", extra="ignore", populate_by_name=True)

    model_fast: str | None = Field(None, description="LiteLLM model string for the fast tier, e.g. openai/gpt-4o-mini")
    model_strong: str | None = Field(None, description="LiteLLM model string for the strong tier")
    fallbacks: list[str] = Field(default_factory=list, description="LiteLLM model strings tried when a tier fails")
    api_base: str | None = Field(None, description="base URL of an OpenAI-compatible server (local LLM)")
    api_key: SecretStr | None = Field(None, description="API key passed to LiteLLM (else provider env vars)")
    temperature: float = Field(0.1, ge=0, le=2, description="LLM sampling temperature")
    max_tokens: int = Field(512, ge=16, le=8192, description="most tokens an LLM answer may have")
    timeout_s: float = Field(60.0, gt=0, description="seconds one LLM call may take")
    num_retries: int = Field(2, ge=0, le=10, description="retries of a failed LLM call before the fallbacks")
    extractive_sentences: int = Field(3, ge=1, le=10, description="most sentences in an extractive answer")
    sentence_scoring: bool = Field(
        True, description="rank extractive sentences with the embedding model too (else words only)"
    )
    stored_sentence_scores: bool = Field(
        True,
        description="rank extractive sentences by the similarities the retriever sends (from sentence vectors "
        "stored at ingest): no model run per answer",
    )
    sentence_fallback: Literal["model", "words"] = Field(
        "model",
        description="when a sentence to rank has no stored similarity (a collection indexed without sentence "
        "vectors): embed the sentences with the model (model) or rank by words alone (words: the model is not loaded)",
    )
    scored_sentences: int = Field(
        12, ge=1, le=200, description="sentences the embedding model re-scores per extractive answer (cost bound)"
    )
    sentence_cache_size: int = Field(
        4096,
        ge=0,
        le=1_000_000,
        description="sentences and questions whose scoring vectors are kept (a repeat skips the model); 0: off",
    )
    model_dir: Path | None = Field(
        None,
        validation_alias=AliasChoices("RAG_MODEL_DIR"),
        description="the embedding model's folder (model.onnx, tokenizer.json); "
        "default <data_dir>/models/all-MiniLM-L6-v2-int8 (`make model`)",
    )
    metrics_port: int = 9104

    @field_validator("model_fast", "model_strong", "api_base", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        """``RAG_GENERATOR_MODEL_FAST=`` (empty, as compose passes it) means "not configured"."""
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def resolved_model_dir(self) -> Path:
        return self.model_dir or self.data_dir / "models" / "all-MiniLM-L6-v2-int8"

    def configured_models(self) -> list[str]:
        """Every LiteLLM model string this generator may call (tiers, then fallbacks)."""
        found = [m for m in (self.model_fast, self.model_strong, *self.fallbacks) if m]
        return list(dict.fromkeys(found))

    def model_for(self, tier: str) -> str | None:
        """The model of a tier, falling back to the other tier's; None means extractive."""
        if tier == "strong":
            return self.model_strong or self.model_fast
        return self.model_fast or self.model_strong
