"""The dev runner's settings (``python -m rag_devrun`` and its worker processes)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class DevRunSettings(BaseSettings):
    """The dev runner's defaults, from the same variables the services read (flags override them)."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    data_dir: Path = Field(Path("data"), validation_alias=AliasChoices("RAG_DATA_DIR"))
    host: str = Field("127.0.0.1", validation_alias=AliasChoices("RAG_GATEWAY_HOST"))
    port: int = Field(8000, validation_alias=AliasChoices("RAG_GATEWAY_PORT"))
    sample_corpus: str = Field("samples/orbitly/corpus", validation_alias=AliasChoices("RAG_SAMPLE_CORPUS"))
    # With RAG_GATEWAY_AUTH=on the corpus is loaded with the admin key.
    admin_key: SecretStr = Field(SecretStr(""), validation_alias=AliasChoices("RAG_GATEWAY_ADMIN_KEY"))
    log_level: str = Field("INFO", validation_alias=AliasChoices("RAG_LOG_LEVEL"))
