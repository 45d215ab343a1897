"""Unit tests for API keys, scopes, rate limits, auth settings and security headers (no broker)."""

from __future__ import annotations

from types import SimpleNamespace

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import ValidationError

from rag_common.transport.runner import load_settings
from rag_gateway.access import admit, presented_key, require
from rag_gateway.auth import (
    ADMIN,
    KeyCreate,
    KeyRecord,
    Principal,
    Right,
    hash_key,
    key_id_of,
    key_matches,
    new_key,
)
from rag_gateway.errors import ApiError, install_error_handlers
from rag_gateway.headers import API_CSP, HTML_CSP, SecurityHeadersMiddleware
from rag_gateway.ratelimit import RateLimiter
from rag_gateway.settings import GatewaySettings

pytestmark = pytest.mark.unit

ADMIN_KEY = "a" * 40


# --- keys and hashes -------------------------------------------------------------------------


def test_new_keys_are_random_parse_back_to_their_id_and_match_only_their_hash() -> None:
    (id1, key1), (id2, key2) = new_key(), new_key()
    assert id1 != id2
    assert key1 != key2
    assert key1.startswith(f"rag_{id1}_")
    assert len(key1) == 4 + 16 + 1 + 43
    assert key_id_of(key1) == id1
    stored = hash_key(key1)
    assert stored.startswith("sha256:")
    assert key1 not in stored
    assert key1.split("_", 2)[2] not in stored
    assert key_matches(key1, stored)
    assert not key_matches(key2, stored)
    assert not key_matches(key1[:-1] + ("A" if key1[-1] != "A" else "B"), stored)


@pytest.mark.parametrize(
    "presented",
    [
        "",
        "rag_",
        "sk-0123456789abcdef",
        "rag_0123456789ABCDEF_" + "x" * 43,  # id must be lowercase hex
        "rag_0123456789abcdef_" + "x" * 42,  # secret too short
        "rag_0123456789abcdef_" + "x" * 44,  # secret too long
        "rag_0123456789abcdef_" + "x" * 42 + "/",  # not url-safe base64
        "rag_0123456789abcde_" + "x" * 44,  # id too short
        " rag_0123456789abcdef_" + "x" * 43,
    ],
)
def test_malformed_keys_have_no_id(presented: str) -> None:
    assert key_id_of(presented) is None


def test_listed_record_never_contains_the_hash() -> None:
    _, key = new_key()
    record = KeyRecord(id="0" * 16, name="app", key_hash=hash_key(key), collections={"a": [Right.READ]})
    public = record.public()
    assert "key_hash" not in public
    assert hash_key(key) not in str(public)
    assert key not in str(public)
    assert public["collections"] == {"a": ["read"]}


# --- key requests -----------------------------------------------------------------------------


def test_key_request_normalises_rights() -> None:
    spec = KeyCreate(name="widget", collections={"docs": ["write", "read", "read"], "*": ["read"]})
    assert spec.collections == {"docs": [Right.READ, Right.WRITE], "*": [Right.READ]}
    assert spec.rate_limit_per_min is None


@pytest.mark.parametrize(
    ("collections", "fragment"),
    [
        ({}, "at least one collection"),
        ({"Bad Name": ["read"]}, "not a collection name"),
        ({"docs\n": ["read"]}, "not a collection name"),
        ({"docs": []}, "at least one right"),
        ({"docs": ["delete"]}, "read"),
    ],
)
def test_bad_key_requests_are_refused(collections: dict[str, list[str]], fragment: str) -> None:
    with pytest.raises(ValidationError) as error:
        KeyCreate.model_validate({"name": "x", "collections": collections})
    assert fragment in str(error.value)


def test_key_request_rejects_unknown_fields_and_bad_limits() -> None:
    with pytest.raises(ValidationError):
        KeyCreate.model_validate({"name": "x", "collections": {"a": ["read"]}, "admin": True})
    with pytest.raises(ValidationError):
        KeyCreate.model_validate({"name": "x", "collections": {"a": ["read"]}, "rate_limit_per_min": 0})
    with pytest.raises(ValidationError):
        KeyCreate.model_validate({"name": "", "collections": {"a": ["read"]}})


# --- scopes -----------------------------------------------------------------------------------


def principal(collections: dict[str, list[Right]], rate: int | None = None) -> Principal:
    record = KeyRecord(id="1" * 16, name="k", key_hash="sha256:x", collections=collections, rate_limit_per_min=rate)
    return Principal.for_key(record, default_rate_limit=600)


def test_read_only_key_reads_its_collection_only() -> None:
    p = principal({"a": [Right.READ]})
    assert p.can("a", Right.READ)
    assert not p.can("a", Right.WRITE)
    assert not p.can("b", Right.READ)
    assert not p.can("b", Right.WRITE)
    assert not p.admin
    assert not p.all_collections
    assert p.rate_limit_per_min == 600  # the gateway default when the key sets none


def test_write_right_does_not_imply_read() -> None:
    p = principal({"uploads": [Right.WRITE]}, rate=5)
    assert p.can("uploads", Right.WRITE)
    assert not p.can("uploads", Right.READ)
    assert p.rate_limit_per_min == 5
    assert p.visible_collections(["uploads", "other"]) == []


def test_star_scope_covers_every_collection_and_adds_to_named_ones() -> None:
    p = principal({"*": [Right.READ], "team": [Right.WRITE]})
    assert p.can("anything", Right.READ)
    assert not p.can("anything", Right.WRITE)
    assert p.rights("team") == {Right.READ, Right.WRITE}
    assert p.all_collections


def test_listing_shows_existing_readable_collections_and_the_keys_named_ones() -> None:
    p = principal({"a": [Right.READ], "fresh": [Right.READ, Right.WRITE], "w": [Right.WRITE]})
    assert p.visible_collections(["a", "b", "default", "w"]) == ["a", "fresh"]


def test_admin_has_every_right_everywhere() -> None:
    assert ADMIN.admin
    assert ADMIN.can("any", Right.WRITE)
    assert ADMIN.rate_limit_per_min is None
    assert ADMIN.visible_collections(["b", "a"]) == ["a", "b"]


# --- rate limits ------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_bucket_allows_a_burst_of_the_limit_then_says_how_long_to_wait() -> None:
    clock = Clock()
    limiter = RateLimiter(clock)
    assert [limiter.take("k", 3) for _ in range(3)] == [0, 0, 0]
    assert limiter.take("k", 3) == 20  # 3 per minute: one token every 20 s
    clock.now += 19.5
    assert limiter.take("k", 3) == 1  # half a second to go, rounded up to a whole second
    clock.now += 0.5
    assert limiter.take("k", 3) == 0
    assert limiter.take("k", 3) > 0
    assert limiter.take("other", 3) == 0  # buckets are per key


def test_bucket_refills_to_its_limit_and_no_further() -> None:
    clock = Clock()
    limiter = RateLimiter(clock)
    for _ in range(60):
        assert limiter.take("k", 60) == 0
    clock.now += 3600
    assert sum(limiter.take("k", 60) == 0 for _ in range(100)) == 60


def test_limiter_memory_is_bounded() -> None:
    clock = Clock()
    limiter = RateLimiter(clock, max_keys=10)
    for i in range(50):
        limiter.take(f"k{i}", 100)
        clock.now += 0.001
    assert len(limiter._buckets) <= 10


# --- settings ---------------------------------------------------------------------------------


def test_auth_is_off_by_default_on_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RAG_GATEWAY_AUTH", "RAG_GATEWAY_ADMIN_KEY", "RAG_GATEWAY_HOST", "RAG_GATEWAY_CORS_ORIGINS"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings(GatewaySettings)
    assert settings.auth == "off"
    assert settings.host == "127.0.0.1"
    assert settings.cors_origins == []


def test_auth_off_beyond_loopback_stops_start_up_naming_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_GATEWAY_AUTH", raising=False)
    monkeypatch.setenv("RAG_GATEWAY_HOST", "0.0.0.0")
    with pytest.raises(SystemExit) as exit_:
        load_settings(GatewaySettings)
    assert "RAG_GATEWAY_AUTH" in str(exit_.value.code)


@pytest.mark.parametrize("key", [None, "short"])
def test_auth_on_needs_a_long_admin_key(monkeypatch: pytest.MonkeyPatch, key: str | None) -> None:
    monkeypatch.setenv("RAG_GATEWAY_AUTH", "on")
    if key is None:
        monkeypatch.delenv("RAG_GATEWAY_ADMIN_KEY", raising=False)
    else:
        monkeypatch.setenv("RAG_GATEWAY_ADMIN_KEY", key)
    with pytest.raises(SystemExit) as exit_:
        load_settings(GatewaySettings)
    message = str(exit_.value.code)
    assert "RAG_GATEWAY_ADMIN_KEY" in message
    assert key is None or key not in message.split("needs")[0]


def test_auth_on_from_environment_keeps_the_key_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_GATEWAY_AUTH", "on")
    monkeypatch.setenv("RAG_GATEWAY_ADMIN_KEY", ADMIN_KEY)
    monkeypatch.setenv("RAG_GATEWAY_HOST", "0.0.0.0")
    monkeypatch.setenv("RAG_GATEWAY_CORS_ORIGINS", "https://app.example.com, http://localhost:3000")
    settings = load_settings(GatewaySettings)
    assert settings.admin_key is not None
    assert settings.admin_key.get_secret_value() == ADMIN_KEY
    assert ADMIN_KEY not in repr(settings)
    assert settings.cors_origins == ["https://app.example.com", "http://localhost:3000"]


@pytest.mark.parametrize("origin", ["app.example.com", "https://app.example.com/path", "ftp://x"])
def test_bad_cors_origin_stops_start_up(monkeypatch: pytest.MonkeyPatch, origin: str) -> None:
    monkeypatch.setenv("RAG_GATEWAY_CORS_ORIGINS", origin)
    with pytest.raises(SystemExit) as exit_:
        load_settings(GatewaySettings)
    assert "RAG_GATEWAY_CORS_ORIGINS" in str(exit_.value.code)


# --- security headers -------------------------------------------------------------------------


def headers_app() -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("unexpected")

    @app.get("/page")
    async def page() -> HTMLResponse:
        return HTMLResponse("<h1>hi</h1>")

    @app.get("/data")
    async def data() -> JSONResponse:
        return JSONResponse({"ok": True})

    @app.get("/own")
    async def own() -> HTMLResponse:
        return HTMLResponse("<p>x</p>", headers={"Content-Security-Policy": "default-src 'self'"})

    app.add_middleware(SecurityHeadersMiddleware)
    return app


def headers_client() -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=headers_app(), raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://gateway")


async def test_every_response_gets_security_headers_and_html_a_strict_csp() -> None:
    async with headers_client() as client:
        for path, status in (("/page", 200), ("/data", 200), ("/missing", 404), ("/boom", 500)):
            response = await client.get(path)
            assert response.status_code == status
            assert response.headers["x-content-type-options"] == "nosniff"
            assert response.headers["x-frame-options"] == "DENY"
            assert response.headers["referrer-policy"] == "no-referrer"
        page = (await client.get("/page")).headers["content-security-policy"]
        assert page == HTML_CSP
        assert "script-src 'self'" in page
        assert "unsafe-inline" not in page
        assert "frame-ancestors 'none'" in page
        assert (await client.get("/data")).headers["content-security-policy"] == API_CSP


async def test_a_route_may_set_its_own_csp() -> None:
    async with headers_client() as client:
        assert (await client.get("/own")).headers["content-security-policy"] == "default-src 'self'"


# --- admitting a caller (the logic behind the FastAPI dependency), with an in-memory key store ---


class MemoryKeys:
    def __init__(self, *records: KeyRecord, broken: bool = False) -> None:
        self.records = {r.id: r for r in records}
        self.broken = broken

    async def get(self, key_id: str) -> KeyRecord | None:
        if self.broken:
            raise ConnectionError("nats: connection closed")
        return self.records.get(key_id)


class MemoryAudit:
    def __init__(self) -> None:
        self.refusals: list[int] = []

    async def refused(self, request: object, principal: object, status: int, reason: str) -> None:
        self.refusals.append(status)


class Admitting:
    """What ``admit`` reads: the gateway's settings and rate limiter, and the open key store and audit log."""

    def __init__(self, keys: MemoryKeys, rate_limit: int = 600) -> None:
        settings = GatewaySettings(auth="on", admin_key=ADMIN_KEY, rate_limit_per_min=rate_limit)
        self.gateway = SimpleNamespace(settings=settings, limiter=RateLimiter(Clock()))
        self.audit = MemoryAudit()
        self.resources = SimpleNamespace(keys=keys, audit=self.audit)

    async def admit(self, presented: str | None) -> Principal:
        return await admit(self.gateway, self.resources, presented)  # type: ignore[arg-type]


def gateway_with(keys: MemoryKeys, rate_limit: int = 600) -> Admitting:
    return Admitting(keys, rate_limit)


def stored(collections: dict[str, list[Right]], rate: int | None = None) -> tuple[KeyRecord, str]:
    key_id, key = new_key()
    record = KeyRecord(id=key_id, name="k", key_hash=hash_key(key), collections=collections, rate_limit_per_min=rate)
    return record, key


async def test_admit_finds_the_keys_principal_and_the_admin() -> None:
    record, key = stored({"a": [Right.READ]})
    gateway = gateway_with(MemoryKeys(record))
    principal = await gateway.admit(key)
    assert principal.key_id == record.id
    assert principal.can("a", Right.READ)
    assert not principal.can("b", Right.READ)
    assert await gateway.admit(ADMIN_KEY) is ADMIN


@pytest.mark.parametrize("presented", [None, "", "nope", ADMIN_KEY + "x"])
async def test_admit_refuses_missing_and_unknown_keys_with_a_challenge(presented: str | None) -> None:
    with pytest.raises(ApiError) as error:
        await gateway_with(MemoryKeys()).admit(presented)
    assert error.value.status == 401
    assert (error.value.headers or {})["WWW-Authenticate"].startswith('Bearer realm="rag"')


async def test_admit_refuses_a_known_id_with_the_wrong_secret() -> None:
    record, key = stored({"a": [Right.READ]})
    forged = key[:21] + ("A" if key[21] != "A" else "B") + key[22:]
    assert key_id_of(forged) == record.id
    with pytest.raises(ApiError) as error:
        await gateway_with(MemoryKeys(record)).admit(forged)
    assert error.value.status == 401


async def test_admit_limits_each_key_and_not_the_admin() -> None:
    record, key = stored({"a": [Right.READ]}, rate=2)
    gateway = gateway_with(MemoryKeys(record))
    for _ in range(2):
        await gateway.admit(key)
    with pytest.raises(ApiError) as error:
        await gateway.admit(key)
    assert error.value.status == 429
    assert (error.value.headers or {})["Retry-After"] == "30"
    assert gateway.audit.refusals == [429]  # the refusal is in the audit log
    for _ in range(50):
        assert await gateway.admit(ADMIN_KEY) is ADMIN


async def test_admit_says_503_before_the_stores_are_open() -> None:
    record, key = stored({"a": [Right.READ]})
    gateway = gateway_with(MemoryKeys(record))
    with pytest.raises(ApiError) as error:
        await admit(gateway.gateway, None, key)  # type: ignore[arg-type]
    assert error.value.status == 503
    assert "not ready" in error.value.message


async def test_admit_says_503_when_the_key_store_is_unreachable() -> None:
    record, key = stored({"a": [Right.READ]})
    with pytest.raises(ApiError) as error:
        await gateway_with(MemoryKeys(record, broken=True)).admit(key)
    assert error.value.status == 503
    assert "nats" not in error.value.message


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"authorization": "Bearer abc"}, "abc"),
        ({"authorization": "bearer  abc "}, "abc"),
        ({"x-api-key": " abc"}, "abc"),
        ({"authorization": "Basic dXNlcjpwdw==", "x-api-key": "abc"}, "abc"),
        ({"authorization": "Bearer "}, None),
        ({}, None),
    ],
)
def test_a_key_is_read_from_bearer_or_x_api_key(headers: dict[str, str], expected: str | None) -> None:
    assert presented_key(headers) == expected


def test_require_names_the_right_and_collection() -> None:
    with pytest.raises(ApiError) as error:
        require(principal({"a": [Right.READ]}), "a", Right.WRITE)
    assert error.value.status == 403
    assert "write" in error.value.message
    assert "'a'" in error.value.message
    require(principal({"a": [Right.READ]}), "a", Right.READ)


@pytest.mark.parametrize(
    "name",
    ["ops\nadmin", "tab\there", "<b>bold</b>", "a & b", 'say "hi"', "it's", "`cmd`", " lead", "trail "],
)
def test_a_key_name_with_a_line_break_or_markup_is_refused(name: str) -> None:
    with pytest.raises(ValidationError, match="name must be 1-64 letters, digits, spaces"):
        KeyCreate(name=name, collections={"docs": [Right.READ]})


def test_plain_key_names_and_tenants_are_accepted() -> None:
    for name in ("support-bot", "CI bot (prod) #2", "ops@example.com", "Zoë's"[:3], "billing: nightly/7"):
        assert KeyCreate(name=name, collections={"docs": [Right.READ]}).name == name
    assert KeyCreate(name="x", collections={"docs": [Right.READ]}, tenant="acme-1").tenant == "acme-1"
    with pytest.raises(ValidationError, match="tenant must be"):
        KeyCreate(name="x", collections={"docs": [Right.READ]}, tenant="Acme Corp")


def test_a_sessions_owner_is_the_tenant_then_the_key() -> None:
    record, _ = stored({"docs": [Right.READ]})
    assert Principal.for_key(record, None).owner == f"key-{record.id}"
    shared = record.model_copy(update={"tenant": "acme"})
    assert Principal.for_key(shared, None).owner == "tenant-acme"
    assert ADMIN.owner == "admin"
    assert ADMIN.actor == "admin"
