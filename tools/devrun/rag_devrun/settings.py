"""The dev runner's settings (``python -m rag_devrun`` and its worker processes)."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class DevRunSettings(BaseSettings):
    """The dev runner's defaults, from the same variables the services read (flags override them)."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    data_dir: Path = Field(
        Path("data"), validation_alias=AliasChoices("RAG_DATA_DIR"), description="local state, as the services"
    )
    host: str = Field("127.0.0.1", validation_alias=AliasChoices("RAG_GATEWAY_HOST"), description="gateway address")
    port: int = Field(8000, validation_alias=AliasChoices("RAG_GATEWAY_PORT"), description="gateway port")
    sample_corpus: str = Field(
        "samples/orbitly/corpus",
        validation_alias=AliasChoices("RAG_SAMPLE_CORPUS"),
        description="folder uploaded at start; empty (or --corpus '') skips it",
    )
    admin_key: SecretStr = Field(
        SecretStr(""),
        validation_alias=AliasChoices("RAG_GATEWAY_ADMIN_KEY"),
        description="with RAG_GATEWAY_AUTH=on the sample corpus is uploaded with this key",
    )
    log_level: str = Field("INFO", validation_alias=AliasChoices("RAG_LOG_LEVEL"), description="log level")
