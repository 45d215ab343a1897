from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from rag_common.config.settings import ServiceSettings
from rag_common.wire.messages import new_id

ADMIN_KEY_MIN_CHARS = 32


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class GatewaySettings(ServiceSettings):
    """Gateway settings; variables start with ``RAG_GATEWAY_``."""

    model_config = SettingsConfigDict(env_prefix="RAG_GATEWAY_", extra="ignore", populate_by_name=True)

    host: str = Field("127.0.0.1", description="bind address (0.0.0.0 in containers)")
    port: int = Field(8000, ge=0, le=65535, description="HTTP port")
    gateway_id: str = Field(default_factory=lambda: new_id()[:12], description="this replica's answer-subject key")
    max_upload_bytes: int = Field(20 * 1024 * 1024, ge=1, description="largest uploaded file (413 above)")
    max_body_bytes: int = Field(
        1024 * 1024, ge=1, description="largest request body other than an upload (413 above, checked before parsing)"
    )
    header_max_bytes: int = Field(
        32 * 1024,
        ge=1024,
        description="largest request head (request line and headers); beyond it 431 and the connection is closed",
    )
    header_timeout_s: float = Field(
        10.0,
        gt=0,
        description="a request head must arrive within this many seconds of the connection (or of the request's "
        "first byte); past it 408 and the connection is closed",
    )
    body_idle_timeout_s: float = Field(
        30.0, gt=0, description="longest pause between chunks of a request body; past it 408 and the connection closed"
    )
    keep_alive_timeout_s: int = Field(5, ge=1, description="an idle kept-alive connection is closed after this long")
    ready_timeout_s: float = Field(1.0, gt=0, description="how long /readyz waits for each service")
    stats_interval_s: float = Field(
        10.0, gt=0, description="how often JetStream backlog (pending, ack-pending, dead letters) is read for /metrics"
    )
    assessment_timeout_s: float = Field(
        900.0, gt=0, description="how long an assessment's event stream waits for its next progress before giving up"
    )
    session_max_turns: int = Field(10, ge=1, le=100, description="turns kept per conversation (session_id)")
    session_ttl_s: float = Field(86400.0, gt=0, description="a conversation idle this long is forgotten")
    auth: Literal["off", "on"] = Field(
        "off", description="API keys required (on) or not (off: only allowed when bound to a loopback address)"
    )
    admin_key: SecretStr | None = Field(None, description="the admin API key (required when auth is on)")
    rate_limit_per_min: int = Field(600, ge=1, description="requests per minute per key unless the key sets its own")
    audit_max_age_s: float = Field(
        90 * 86400.0, gt=0, description="audit events older than this are dropped from the RAG_AUDIT stream"
    )
    audit_max_bytes: int = Field(
        256 * 1024 * 1024, ge=1024 * 1024, description="the RAG_AUDIT stream's size cap (oldest events go first)"
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="comma-separated browser origins allowed to call the API; empty = none"
    )

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        if isinstance(value, str):
            return [o.strip() for o in value.split(",") if o.strip()]
        return value

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, value: list[str]) -> list[str]:
        for origin in value:
            scheme, _, rest = origin.partition("://")
            if origin != "*" and (scheme not in ("http", "https") or not rest or "/" in rest):
                raise ValueError(
                    f"RAG_GATEWAY_CORS_ORIGINS: {origin!r} is not an origin; use e.g. https://app.example.com (no path)"
                )
        return value

    @model_validator(mode="after")
    def _auth_consistent(self) -> GatewaySettings:
        if self.auth == "on":
            key = self.admin_key.get_secret_value() if self.admin_key else ""
            if len(key) < ADMIN_KEY_MIN_CHARS:
                raise ValueError(
                    f"RAG_GATEWAY_AUTH=on needs RAG_GATEWAY_ADMIN_KEY of at least {ADMIN_KEY_MIN_CHARS} characters "
                    "(e.g. from: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
                )
        elif not is_loopback(self.host):
            raise ValueError(
                f"RAG_GATEWAY_AUTH is off but RAG_GATEWAY_HOST={self.host} serves beyond this machine: "
                "set RAG_GATEWAY_AUTH=on with RAG_GATEWAY_ADMIN_KEY, or bind 127.0.0.1"
            )
        return self
