"""Settings bases shared by every service.

Infrastructure settings (where NATS and Qdrant are) use plain, shared names such as ``NATS_URL``;
each service's own settings carry its prefix (``RAG_ROUTER_``, ``RAG_GATEWAY_``...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _env(name: str) -> AliasChoices:
    return AliasChoices(name)


def nats_servers(url: str) -> list[str]:
    """The servers of a ``NATS_URL``: one URL or a comma-separated list, spaces ignored."""
    return [part.strip() for part in url.split(",") if part.strip()]


class ServiceSettings(BaseSettings):
    """What every service needs: NATS, JetStream sizing, metrics and logs."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    nats_url: str = Field(
        "nats://127.0.0.1:4222",
        validation_alias=_env("NATS_URL"),
        description="NATS server URL, or a comma-separated list of a cluster's servers (tried in turn); "
        "`make run` starts one here if none answers",
    )
    nats_user: str | None = Field(
        None, validation_alias=_env("NATS_USER"), description="NATS user; set with NATS_PASSWORD, or neither"
    )
    nats_password: SecretStr | None = Field(
        None,
        validation_alias=_env("NATS_PASSWORD"),
        description="NATS password; an empty one (an unfilled Secret) stops the process at start-up",
    )
    nats_tls_ca_file: Path | None = Field(
        None, validation_alias=_env("NATS_TLS_CA_FILE"), description="CA that signed the NATS server certificate"
    )
    nats_tls_cert_file: Path | None = Field(
        None, validation_alias=_env("NATS_TLS_CERT_FILE"), description="client certificate for mutual TLS to NATS"
    )
    nats_tls_key_file: Path | None = Field(
        None, validation_alias=_env("NATS_TLS_KEY_FILE"), description="key of the client certificate"
    )
    data_dir: Path = Field(
        Path("data"),
        validation_alias=_env("RAG_DATA_DIR"),
        description="local state: qdrant/, nats/ and models/ (`make model` fills models/)",
    )
    js_replicas: int = Field(
        1,
        ge=1,
        le=5,
        validation_alias=_env("RAG_JS_REPLICAS"),
        description="replicas of JetStream streams and buckets (3 in Kubernetes)",
    )
    max_deliver: int = Field(
        3,
        ge=1,
        le=20,
        validation_alias=_env("RAG_MAX_DELIVER"),
        description="attempts at a message before it is dead-lettered",
    )
    dlq_max_bytes: int = Field(
        256 * 1024 * 1024,
        ge=1024 * 1024,
        validation_alias=_env("RAG_DLQ_MAX_BYTES"),
        description="the dead-letter stream (RAG_DLQ) keeps at most this many bytes; the oldest letters go first",
    )
    dlq_max_age_s: float = Field(
        14 * 24 * 3600.0,
        gt=0,
        validation_alias=_env("RAG_DLQ_MAX_AGE_S"),
        description="a dead letter is kept this long",
    )
    query_timeout_s: float = Field(
        60.0,
        gt=0,
        validation_alias=AliasChoices("RAG_QUERY_TIMEOUT_S", "RAG_GATEWAY_QUERY_TIMEOUT_S"),
        description="how long a client waits for an answer (the gateway's 504); stages redeliver well within it",
    )
    query_ack_wait_s: float | None = Field(
        None,
        gt=0,
        validation_alias=_env("RAG_QUERY_ACK_WAIT_S"),
        description="redelivery delay of a query stage whose worker died; default RAG_QUERY_TIMEOUT_S / 3",
    )
    js_check_interval_s: float = Field(
        5.0,
        gt=0,
        le=300,
        validation_alias=_env("RAG_JS_CHECK_INTERVAL_S"),
        description="how often a service checks that its streams and consumers exist (re-declared if not)",
    )
    metrics_host: str = Field(
        "127.0.0.1", validation_alias=_env("RAG_METRICS_HOST"), description="bind address of the metrics port"
    )
    metrics_port: int = Field(
        0, ge=0, le=65535, description="/metrics, /livez and /readyz port (0: not served); each service sets its own"
    )
    log_level: str = Field("INFO", validation_alias=_env("RAG_LOG_LEVEL"), description="log level (DEBUG, INFO, ...)")
    otlp_endpoint: str | None = Field(
        None,
        validation_alias=AliasChoices("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        description="OTLP/HTTP collector; spans leave the process only when it is set",
    )
    trace_console: bool = Field(False, validation_alias=_env("RAG_TRACE_CONSOLE"), description="print spans")
    concurrency: int = Field(8, ge=1, le=256, description="messages one replica handles at once")
    max_replicas: int = Field(
        10,
        ge=1,
        le=500,
        description="most replicas the autoscaler may run (KEDA maxReplicaCount); sizes the consumer's max_ack_pending",
    )
    drain_timeout_s: float = Field(
        15.0, gt=0, le=600, description="on SIGTERM, in-flight messages get this long to finish (then are nak'ed)"
    )
    publish_timeout_s: float = Field(
        5.0,
        gt=0,
        le=60,
        validation_alias=_env("RAG_PUBLISH_TIMEOUT_S"),
        description=(
            "how long a JetStream publish (a question, an upload, a stage hand-off, a dead letter) waits for the "
            "server's acknowledgement before it fails (FastStream's own default is 0.5 s, too short under load)"
        ),
    )
    liveness_timeout_s: float = Field(
        2.0, gt=0, le=60, description="/livez fails when the event loop does not answer within this"
    )
    collections_file: Path | None = Field(
        None,
        validation_alias=_env("RAG_COLLECTIONS_FILE"),
        description="JSON file of per-collection profiles: name, texts, contact, terminology (rag_common.config.texts)",
    )

    @property
    def max_ack_pending(self) -> int:
        """Unacknowledged messages the consumer allows, across all replicas at full scale."""
        return self.max_replicas * self.concurrency

    @model_validator(mode="after")
    def _nats_credentials_pair(self) -> ServiceSettings:
        password = self.nats_password.get_secret_value().strip() if self.nats_password else ""
        if bool(self.nats_user) != bool(password):
            raise ValueError("set both NATS_USER and NATS_PASSWORD (not empty: fill the Secret), or neither")
        return self

    @model_validator(mode="after")
    def _redelivery_within_deadline(self) -> ServiceSettings:
        if self.query_ack_wait_s is not None and self.query_ack_wait_s > self.query_timeout_s / 3:
            raise ValueError(
                f"RAG_QUERY_ACK_WAIT_S={self.query_ack_wait_s:g} must be at most RAG_QUERY_TIMEOUT_S / 3 "
                f"({self.query_timeout_s / 3:g}): a question held by a crashed worker must be redelivered "
                "well before the client gives up"
            )
        return self

    @property
    def stage_ack_wait_s(self) -> float:
        """How long a query stage's message stays with a silent worker before another one gets it.

        Live workers send "in progress" every third of it (``process_message``), so slow work is
        not redelivered; a dead worker's question is redelivered within a third of the client's
        deadline, and twice more at most (``max_deliver``).
        """
        return self.query_ack_wait_s or self.query_timeout_s / 3

    @field_validator("nats_url")
    @classmethod
    def _nats_scheme(cls, value: str) -> str:
        servers = nats_servers(value)
        if not servers or not all(s.startswith(("nats://", "tls://", "ws://", "wss://")) for s in servers):
            raise ValueError(
                f"NATS_URL must look like nats://host:4222 (a cluster: nats://a:4222,nats://b:4222), got {value!r}"
            )
        return ",".join(servers)

    @property
    def nats_servers(self) -> list[str]:
        """Every server of ``NATS_URL``: a cluster's members, so a client moves on when one goes."""
        return nats_servers(self.nats_url)


class StoreSettings(ServiceSettings):
    """For services that embed text or touch the vector store (ingest, retriever)."""

    qdrant_url: str | None = Field(
        None,
        validation_alias=_env("QDRANT_URL"),
        description="Qdrant server; unset = an embedded store (RAG_VECTOR_BACKEND) in QDRANT_PATH, one owning process",
    )
    qdrant_api_key: str | None = Field(
        None, validation_alias=_env("QDRANT_API_KEY"), description="API key of the Qdrant server"
    )
    qdrant_path: Path | None = Field(
        None,
        validation_alias=_env("QDRANT_PATH"),
        description="folder of the embedded store; default <data_dir>/qdrant",
    )
    vector_backend: Literal["local", "edge"] = Field(
        "edge",
        validation_alias=_env("RAG_VECTOR_BACKEND"),
        description="embedded store without QDRANT_URL: edge (Qdrant Edge) or local (qdrant-client local mode)",
    )
    model_dir: Path | None = Field(
        None,
        validation_alias=_env("RAG_MODEL_DIR"),
        description="the embedding model's folder (model.onnx, tokenizer.json); "
        "default <data_dir>/models/all-MiniLM-L6-v2-int8 (`make model`)",
    )
    second_dense: bool = Field(
        False,
        validation_alias=_env("RAG_SECOND_DENSE"),
        description="embed chunks (ingest) and questions (retriever) with a second dense model too, bge-small-en-v1.5, "
        "stored as a second named vector and fused with MiniLM and BM25 (set it alike for ingest and retriever)",
    )
    second_model_dir: Path | None = Field(
        None,
        validation_alias=_env("RAG_SECOND_MODEL_DIR"),
        description="the second dense model's folder (model.onnx, tokenizer.json); "
        "default <data_dir>/models/bge-small-en-v1.5-int8 (`make model`)",
    )

    @field_validator("qdrant_api_key")
    @classmethod
    def _key_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("QDRANT_API_KEY is set but empty: fill the Secret it comes from, or unset it")
        return value

    @property
    def resolved_qdrant_path(self) -> Path:
        """Where the embedded vector store keeps its files: ``QDRANT_PATH``, else under the data folder."""
        return self.qdrant_path or self.data_dir / "qdrant"

    @property
    def resolved_model_dir(self) -> Path:
        """The MiniLM folder: ``RAG_MODEL_DIR``, else where ``make model`` puts it under the data folder."""
        return self.model_dir or self.data_dir / "models" / "all-MiniLM-L6-v2-int8"

    @property
    def resolved_second_model_dir(self) -> Path:
        """The second dense model's folder: its setting, else where ``make model`` puts it."""
        return self.second_model_dir or self.data_dir / "models" / "bge-small-en-v1.5-int8"
