"""Unit tests for configuration: bad settings fail at start-up, naming the setting."""

from __future__ import annotations

from pathlib import Path

import pytest
from faststream.nats.security import NatsUserPassword
from pydantic import ValidationError

from rag_common.config.settings import StoreSettings
from rag_common.transport.broker import nats_security
from rag_common.transport.runner import load_settings
from rag_router.settings import RouterSettings

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("url", ["localhost:4222", "http://localhost:4222"])
def test_bad_nats_url_exits_naming_the_setting(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("NATS_URL", url)
    with pytest.raises(SystemExit) as exit_:
        load_settings(RouterSettings)
    message = str(exit_.value.code)
    assert "RouterSettings" in message
    assert "nats_url" in message.lower()
    assert url in message


def test_good_settings_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NATS_URL", "nats://nats.internal:4222")
    monkeypatch.setenv("RAG_ROUTER_THRESHOLD", "6")
    settings = load_settings(RouterSettings)
    assert (settings.nats_url, settings.threshold) == ("nats://nats.internal:4222", 6)


def test_nats_url_takes_a_cluster_as_a_comma_separated_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NATS_URL", "nats://nats-0:4222, nats://nats-1:4222,nats://nats-2:4222")
    settings = load_settings(RouterSettings)
    assert settings.nats_servers == ["nats://nats-0:4222", "nats://nats-1:4222", "nats://nats-2:4222"]


def test_a_bad_member_of_the_nats_list_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NATS_URL", "nats://nats-0:4222,nats-1:4222")
    with pytest.raises(SystemExit) as exit_:
        load_settings(RouterSettings)
    assert "nats_url" in str(exit_.value.code).lower()
    assert "nats-1:4222" in str(exit_.value.code)


def test_router_threshold_below_one_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_ROUTER_THRESHOLD", "0")
    with pytest.raises(SystemExit) as exit_:
        load_settings(RouterSettings)
    assert "threshold" in str(exit_.value.code)


def test_local_qdrant_lives_under_the_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("QDRANT_URL", "QDRANT_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path))
    settings = StoreSettings()
    assert settings.qdrant_url is None
    assert settings.resolved_qdrant_path.is_relative_to(tmp_path)


def test_explicit_qdrant_path_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("QDRANT_PATH", str(tmp_path / "elsewhere"))
    assert StoreSettings().resolved_qdrant_path == tmp_path / "elsewhere"


def test_the_embedded_backend_is_chosen_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_VECTOR_BACKEND", raising=False)
    assert StoreSettings().vector_backend == "edge"
    monkeypatch.setenv("RAG_VECTOR_BACKEND", "local")
    assert StoreSettings().vector_backend == "local"
    monkeypatch.setenv("RAG_VECTOR_BACKEND", "lance")
    with pytest.raises(ValidationError, match="RAG_VECTOR_BACKEND"):
        StoreSettings()


def test_an_empty_secret_template_stops_the_service_naming_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Kubernetes Secrets ship empty: a service must refuse to start on them, not run open."""
    monkeypatch.setenv("NATS_USER", "rag")
    monkeypatch.setenv("NATS_PASSWORD", "")
    with pytest.raises(SystemExit) as exit_:
        load_settings(RouterSettings)
    assert "NATS_PASSWORD" in str(exit_.value.code)
    monkeypatch.delenv("NATS_USER")
    monkeypatch.delenv("NATS_PASSWORD")
    monkeypatch.setenv("QDRANT_API_KEY", "")
    with pytest.raises(SystemExit) as exit_:
        load_settings(StoreSettings)
    assert "QDRANT_API_KEY" in str(exit_.value.code)


def test_nats_user_password_and_tls_reach_the_connection(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NATS_URL", "tls://nats.internal:4222")
    monkeypatch.setenv("NATS_USER", "rag")
    monkeypatch.setenv("NATS_PASSWORD", "s3cret")
    security = nats_security(load_settings(RouterSettings))
    assert isinstance(security, NatsUserPassword)
    assert (security.username, security.password) == ("rag", "s3cret")
    assert security.ssl_context is not None
    assert security.use_ssl
