"""Authentication, scopes, rate limits, CORS and security headers, through HTTP, with auth on.

A gateway and every service run on a private nats-server with ``RAG_GATEWAY_AUTH=on``; the
admin loads one document into collection ``alpha`` and one into ``beta``; keys are created
through the API, as an operator would.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import openai
import pytest

from rag_common.store.documents import document_id_for
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from rag_scorecard.cli import main as rag_eval
from tests.support.http import parse_sse, upload, wait_for_status
from tests.support.system import stack_options

pytestmark = pytest.mark.e2e

ADMIN_KEY = "test-admin-key-0123456789abcdefghijklmnop"
ALLOWED_ORIGIN = "https://widget.allowed.example"
ALPHA_DOC = b"# Alpha handbook\n\nThe alpha greenhouse door code is 7316 and it is opened by the robot Vega.\n"
BETA_DOC = b"# Beta handbook\n\nThe beta vault combination is 4420 and only the robot Lyra may open it.\n"
SECURITY_HEADERS = {"x-content-type-options": "nosniff", "x-frame-options": "DENY", "referrer-policy": "no-referrer"}


@contextmanager
def gateway_log() -> Iterator[list[str]]:
    """Messages the gateway logs while the block runs."""
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    logger = logging.getLogger("rag.gateway")
    handler, level = Collect(logging.INFO), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@dataclass
class AuthSystem:
    base_url: str
    startup_log: list[str]
    alpha_doc: str
    beta_doc: str

    def client(self, key: str | None = None, header: str = "bearer", **kwargs: Any) -> httpx.AsyncClient:
        headers: dict[str, str] = {}
        if key is not None:
            headers = {"Authorization": f"Bearer {key}"} if header == "bearer" else {"X-API-Key": key}
        return httpx.AsyncClient(base_url=self.base_url, timeout=60, headers=headers, **kwargs)


@pytest.fixture(scope="module")
async def auth_system(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> AsyncIterator[AuthSystem]:
    data_dir = tmp_path_factory.mktemp("auth")
    server = LocalNatsServer(data_dir / "nats")
    server.start()
    gateway = {"auth": "on", "admin_key": ADMIN_KEY, "cors_origins": [ALLOWED_ORIGIN], "query_timeout_s": 30}
    options = stack_options(data_dir, server.url, model_dir, gateway=gateway)
    try:
        with gateway_log() as startup_log:
            stack = await Stack(options).__aenter__()
        try:
            system = AuthSystem(stack.base_url, startup_log, "", "")
            async with system.client(ADMIN_KEY) as admin:
                ids = []
                for name, body, collection in (("alpha.md", ALPHA_DOC, "alpha"), ("beta.md", BETA_DOC, "beta")):
                    response = await upload(admin, name, body, collection)
                    assert response.status_code == 202, response.text
                    ids.append(response.json()["document_id"])
                for document_id in ids:
                    assert (await wait_for_status(admin, document_id))["status"] == "indexed"
            system.alpha_doc, system.beta_doc = ids
            yield system
        finally:
            await stack.__aexit__(None, None, None)
    finally:
        server.stop()


async def create_key(system: AuthSystem, collections: dict[str, list[str]], **extra: Any) -> dict[str, Any]:
    async with system.client(ADMIN_KEY) as admin:
        response = await admin.post("/v1/keys", json={"name": "test", "collections": collections, **extra})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


def question(text: str, collection: str, **extra: Any) -> dict[str, Any]:
    return {"question": text, "collection": collection, **extra}


# Every endpoint behind authentication, with a request a client could send.
PROTECTED: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/v1/query", {"json": question("door code?", "alpha")}),
    ("POST", "/v1/query/stream", {"json": question("door code?", "alpha")}),
    ("POST", "/v1/documents", {"files": {"file": ("x.md", b"# x\n\nhello")}, "data": {"collection": "alpha"}}),
    ("GET", "/v1/documents", {}),
    ("GET", "/v1/documents/0123", {}),
    ("DELETE", "/v1/documents/0123", {}),
    ("GET", "/v1/sessions/s1", {}),
    ("DELETE", "/v1/sessions/s1", {}),
    ("GET", "/v1/collections", {}),
    ("GET", "/v1/keys", {}),
    ("POST", "/v1/keys", {"json": {"name": "x", "collections": {"alpha": ["read"]}}}),
    ("DELETE", "/v1/keys/0123456789abcdef", {}),
    ("GET", "/v1/audit", {}),
    ("GET", "/v1/collections/alpha/profile", {}),
    ("PUT", "/v1/collections/alpha/profile", {"json": {"assistant_name": "Alpha Help"}}),
    ("DELETE", "/v1/collections/alpha/profile", {}),
    ("GET", "/v1/models", {}),
    ("GET", "/v1/models/alpha", {}),
    ("POST", "/v1/chat/completions", {"json": {"model": "alpha", "messages": [{"role": "user", "content": "code?"}]}}),
]


async def test_start_up_log_says_authentication_is_on(auth_system: AuthSystem) -> None:
    assert any(m.startswith("authentication is ON") for m in auth_system.startup_log), auth_system.startup_log


@pytest.mark.parametrize(("method", "path", "request_args"), PROTECTED, ids=[f"{m} {p}" for m, p, _ in PROTECTED])
async def test_every_endpoint_needs_a_valid_key(
    auth_system: AuthSystem, method: str, path: str, request_args: dict[str, Any]
) -> None:
    wrong_but_well_formed = "rag_0123456789abcdef_" + "A" * 43
    attempts: list[tuple[str | None, str]] = [
        (None, "bearer"),
        ("not-a-key", "bearer"),
        ("not-a-key", "x-api-key"),
        (wrong_but_well_formed, "bearer"),
        (ADMIN_KEY[:-1], "x-api-key"),
    ]
    for key, header in attempts:
        async with auth_system.client(key, header) as http:
            response = await http.request(method, path, **request_args)
        assert_error(response, 401, "unauthorized")
        assert response.headers["www-authenticate"].startswith('Bearer realm="rag"')
        assert ADMIN_KEY not in response.text


async def test_unauthenticated_upload_is_refused_before_its_body_is_sent(auth_system: AuthSystem) -> None:
    """A client announcing a 10 MB upload without a key gets its 401 before sending the body."""
    url = urlsplit(auth_system.base_url)
    assert url.hostname
    assert url.port
    for key_header in ("", "X-API-Key: rag_0123456789abcdef_" + "B" * 43 + "\r\n"):
        reader, writer = await asyncio.open_connection(url.hostname, url.port)
        try:
            writer.write(
                f"POST /v1/documents HTTP/1.1\r\nHost: {url.netloc}\r\n{key_header}"
                "Content-Type: multipart/form-data; boundary=xyz\r\nContent-Length: 10000000\r\n\r\n--xyz\r\n".encode()
            )
            await writer.drain()
            head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)).decode().lower()
        finally:
            writer.close()
        assert head.startswith("http/1.1 401 "), head
        assert "www-authenticate: bearer" in head


async def test_health_and_metrics_stay_open(auth_system: AuthSystem) -> None:
    async with auth_system.client() as http:
        assert (await http.get("/healthz")).status_code == 200
        assert (await http.get("/readyz")).status_code == 200
        metrics = await http.get("/metrics")
    assert metrics.status_code == 200
    assert "rag_http_request_duration_seconds" in metrics.text


async def test_read_only_key_reads_its_collection_and_nothing_else(auth_system: AuthSystem) -> None:
    key = (await create_key(auth_system, {"alpha": ["read"]}))["key"]
    async with auth_system.client(key) as http:
        answer = await http.post("/v1/query", json=question("What is the alpha greenhouse door code?", "alpha"))
        assert answer.status_code == 200, answer.text
        assert "7316" in answer.json()["answer"]
        assert {p["source"] for p in answer.json()["passages"]} == {"alpha.md"}

        assert_error(await http.post("/v1/query", json=question("beta vault combination?", "beta")), 403, "forbidden")
        assert_error(await http.post("/v1/query", json=question("anything?", "default")), 403, "forbidden")
        upload_alpha = await upload(http, "new.md", b"# New\n\nSomething new in alpha.", "alpha")
        assert_error(upload_alpha, 403, "forbidden")
        assert_error(await http.delete(f"/v1/documents/{auth_system.alpha_doc}"), 403, "forbidden")

        assert (await http.get(f"/v1/documents/{auth_system.alpha_doc}")).json()["status"] == "indexed"
        assert_error(await http.get(f"/v1/documents/{auth_system.beta_doc}"), 404, "document_not_found")
        assert_error(await http.delete(f"/v1/documents/{auth_system.beta_doc}"), 404, "document_not_found")

        listed = (await http.get("/v1/documents")).json()["documents"]
        assert {d["collection"] for d in listed} == {"alpha"}
        assert {d["source"] for d in listed} == {"alpha.md"}
        assert_error(await http.get("/v1/documents", params={"collection": "beta"}), 403, "forbidden")
        collections = (await http.get("/v1/collections")).json()["collections"]
        assert collections == [{"name": "alpha", "documents": 1, "rights": ["read"]}]

    async with auth_system.client(ADMIN_KEY) as admin:  # nothing was deleted by the refused calls
        assert (await admin.get(f"/v1/documents/{auth_system.beta_doc}")).json()["status"] == "indexed"


async def test_x_api_key_header_works_like_bearer(auth_system: AuthSystem) -> None:
    key = (await create_key(auth_system, {"beta": ["read"]}))["key"]
    async with auth_system.client(key, "x-api-key") as http:
        answer = await http.post("/v1/query", json=question("What is the beta vault combination?", "beta"))
        assert answer.status_code == 200
        assert "4420" in answer.json()["answer"]
        assert_error(await http.post("/v1/query", json=question("door code?", "alpha")), 403, "forbidden")


async def test_streaming_is_checked_before_the_stream_starts(auth_system: AuthSystem) -> None:
    key = (await create_key(auth_system, {"alpha": ["read"]}))["key"]
    async with auth_system.client(key) as http:
        refused = await http.post("/v1/query/stream", json=question("beta vault combination?", "beta"))
        assert_error(refused, 403, "forbidden")
        assert not refused.headers["content-type"].startswith("text/event-stream")
        streamed = await http.post("/v1/query/stream", json=question("What is the alpha door code?", "alpha"))
    assert streamed.status_code == 200
    events = parse_sse(streamed.text)
    assert events[-1][0] == "done"
    assert "7316" in events[-1][1]["answer"]


async def test_write_key_uploads_and_deletes_only_in_its_collection(auth_system: AuthSystem) -> None:
    key = (await create_key(auth_system, {"alpha": ["read", "write"]}))["key"]
    async with auth_system.client(key) as http:
        accepted = await upload(http, "notes.md", b"# Notes\n\nThe alpha pond holds eleven koi.\n", "alpha")
        assert accepted.status_code == 202, accepted.text
        document_id = accepted.json()["document_id"]
        assert (await wait_for_status(http, document_id))["status"] == "indexed"
        assert_error(await upload(http, "notes.md", b"# Notes\n\nsneaky", "beta"), 403, "forbidden")
        assert (await http.delete(f"/v1/documents/{document_id}")).status_code == 202


async def test_sessions_are_scoped_by_their_collection(auth_system: AuthSystem) -> None:
    key = (await create_key(auth_system, {"alpha": ["read"]}))["key"]
    async with auth_system.client(ADMIN_KEY) as admin:
        asked = await admin.post("/v1/query", json=question("beta vault combination?", "beta", session_id="beta-s1"))
        assert asked.status_code == 200
    async with auth_system.client(key) as http:
        own = await http.post("/v1/query", json=question("alpha door code?", "alpha", session_id="alpha-s1"))
        assert own.status_code == 200
        session = await http.get("/v1/sessions/alpha-s1")
        assert session.status_code == 200
        assert session.json()["collection"] == "alpha"
        assert_error(await http.get("/v1/sessions/beta-s1"), 404, "not_found")
        assert_error(await http.delete("/v1/sessions/beta-s1"), 404, "not_found")
        assert (await http.delete("/v1/sessions/alpha-s1")).status_code == 204
    async with auth_system.client(ADMIN_KEY) as admin:
        assert (await admin.get("/v1/sessions/beta-s1")).status_code == 200


async def test_admin_can_do_everything_and_manage_keys(auth_system: AuthSystem) -> None:
    async with auth_system.client(ADMIN_KEY) as admin:
        for collection, code in (("alpha", "7316"), ("beta", "4420")):
            answer = await admin.post("/v1/query", json=question(f"What is the {collection} code?", collection))
            assert answer.status_code == 200
            assert code in answer.json()["answer"]
        listed = {d["collection"] for d in (await admin.get("/v1/documents")).json()["documents"]}
        assert {"alpha", "beta"} <= listed
        names = [c["name"] for c in (await admin.get("/v1/collections")).json()["collections"]]
        assert {"alpha", "beta"} <= set(names)

        created = (await admin.post("/v1/keys", json={"name": "ci bot", "collections": {"beta": ["write"]}})).json()
        assert created["key"].startswith("rag_")
        assert created["collections"] == {"beta": ["write"]}
        keys = (await admin.get("/v1/keys")).json()["keys"]
        mine = [k for k in keys if k["id"] == created["id"]]
        assert mine
        assert mine[0]["name"] == "ci bot"
        assert all("key" not in k and "key_hash" not in k for k in keys)
        assert created["key"] not in str(keys)

    async with auth_system.client(created["key"]) as ci:
        assert_error(await ci.get("/v1/keys"), 403, "forbidden")  # only the admin manages keys
        grab = {"name": "escalate", "collections": {"*": ["read", "write"]}}
        assert_error(await ci.post("/v1/keys", json=grab), 403, "forbidden")
        assert (await ci.get("/v1/collections")).json()["collections"] == []  # write without read lists nothing

    async with auth_system.client(ADMIN_KEY) as admin:
        assert (await admin.delete(f"/v1/keys/{created['id']}")).status_code == 204
        assert_error(await admin.delete(f"/v1/keys/{created['id']}"), 404, "not_found")
    async with auth_system.client(created["key"]) as revoked:
        assert_error(await revoked.get("/v1/collections"), 401, "unauthorized")


async def test_bad_key_requests_are_422(auth_system: AuthSystem) -> None:
    async with auth_system.client(ADMIN_KEY) as admin:
        for body in (
            {"name": "x", "collections": {}},
            {"name": "x", "collections": {"Alpha!": ["read"]}},
            {"name": "x", "collections": {"alpha": ["admin"]}},
            {"name": "x", "collections": {"alpha": ["read"]}, "rate_limit_per_min": 0},
        ):
            assert_error(await admin.post("/v1/keys", json=body), 422, "invalid_request")


async def test_rate_limit_gives_429_with_retry_after(auth_system: AuthSystem) -> None:
    key = (await create_key(auth_system, {"alpha": ["read"]}, rate_limit_per_min=3))["key"]
    other = (await create_key(auth_system, {"alpha": ["read"]}, rate_limit_per_min=3))["key"]
    async with auth_system.client(key) as http:
        for _ in range(3):
            assert (await http.get("/v1/collections")).status_code == 200
        limited = await http.get("/v1/collections")
        assert_error(limited, 429, "rate_limited")
        retry_after = int(limited.headers["retry-after"])
        assert 1 <= retry_after <= 20  # 3 per minute: a token every 20 s
        assert_error(await http.post("/v1/query", json=question("door code?", "alpha")), 429, "rate_limited")
    async with auth_system.client(other) as http:  # limits are per key
        assert (await http.get("/v1/collections")).status_code == 200


async def test_cors_preflight_allows_only_the_configured_origin(auth_system: AuthSystem) -> None:
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type",
    }
    async with auth_system.client() as http:
        allowed = await http.options("/v1/query", headers={"Origin": ALLOWED_ORIGIN, **preflight})
        other = await http.options("/v1/query", headers={"Origin": "https://evil.example", **preflight})
        unauthenticated = await http.post("/v1/query", json=question("q", "alpha"), headers={"Origin": ALLOWED_ORIGIN})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    assert "authorization" in allowed.headers["access-control-allow-headers"].lower()
    assert other.status_code == 400
    assert "access-control-allow-origin" not in other.headers
    # the browser may read why a call failed, including Retry-After on a 429
    assert unauthenticated.status_code == 401
    assert unauthenticated.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    assert "retry-after" in unauthenticated.headers["access-control-expose-headers"].lower()


async def test_security_headers_on_every_response(auth_system: AuthSystem) -> None:
    key = (await create_key(auth_system, {"alpha": ["read"]}))["key"]
    async with auth_system.client(key) as http:
        responses = [
            await http.get("/healthz"),
            await http.get("/v1/collections"),
            await http.post("/v1/query/stream", json=question("alpha door code?", "alpha")),
            await http.post("/v1/query", json=question("beta?", "beta")),
            await http.get("/nowhere"),
        ]
    async with auth_system.client() as anonymous:
        responses.append(await anonymous.get("/v1/documents"))
        docs_page = await anonymous.get("/docs")
    for response in [*responses, docs_page]:
        for name, value in SECURITY_HEADERS.items():
            assert response.headers.get(name) == value, (response.url, name)
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert [r.status_code for r in responses] == [200, 200, 200, 403, 404, 401]
    assert responses[1].headers["content-security-policy"] == "default-src 'none'; frame-ancestors 'none'"
    assert docs_page.headers["content-type"].startswith("text/html")


async def test_auth_off_is_stated_at_start_up_and_lets_local_callers_in(
    tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path
) -> None:
    options = stack_options(tmp_path, nats_server.url, model_dir)
    options.services = ()
    with gateway_log() as log:
        async with Stack(options) as stack, httpx.AsyncClient(base_url=stack.base_url, timeout=30) as http:
            collections = await http.get("/v1/collections")
            keys = await http.get("/v1/keys")
    assert any(m.startswith("authentication is OFF (local default)") for m in log), log
    assert collections.status_code == 200
    assert keys.status_code == 200
    assert collections.headers["x-content-type-options"] == "nosniff"


async def test_openai_api_lists_and_answers_only_what_the_key_may_read(auth_system: AuthSystem) -> None:
    key = (await create_key(auth_system, {"alpha": ["read"]}))["key"]
    base_url = f"{auth_system.base_url}/v1"
    async with openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0) as oai:
        assert [m.id for m in (await oai.models.list()).data] == ["alpha"]
        completion = await oai.chat.completions.create(
            model="alpha", messages=[{"role": "user", "content": "What is the alpha greenhouse door code?"}]
        )
        assert "7316" in (completion.choices[0].message.content or "")
        with pytest.raises(openai.NotFoundError) as hidden:
            await oai.chat.completions.create(model="beta", messages=[{"role": "user", "content": "vault?"}])
        assert isinstance(hidden.value.body, dict)
        assert hidden.value.body["code"] == "model_not_found"
    async with openai.AsyncOpenAI(base_url=base_url, api_key="not-a-key", max_retries=0) as stranger:
        with pytest.raises(openai.AuthenticationError) as refused:
            await stranger.chat.completions.create(model="alpha", messages=[{"role": "user", "content": "code?"}])
        with pytest.raises(openai.AuthenticationError):
            await stranger.models.list()
    body = refused.value.body
    assert isinstance(body, dict)
    assert body["type"] == "authentication_error"
    assert "message" in body


async def test_rag_eval_sends_the_api_key_it_is_given(
    auth_system: AuthSystem, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``rag-eval --api-key KEY ...`` (README: ``--api-key`` or ``RAG_API_KEY`` for every command)
    runs the harness against a gateway with authentication on: it uploads and asks with that key."""
    key = (await create_key(auth_system, {"eval-keyed": ["read", "write"]}))["key"]
    dataset = tmp_path / "keyed"
    (dataset / "corpus").mkdir(parents=True)
    (dataset / "corpus" / "gamma.md").write_text("# Gamma\n\nThe gamma depot opens at 07:15 on Saturdays.\n")
    item = {"id": "k1", "question": "When does the gamma depot open on Saturdays?", "expected_keywords": ["07:15"]}
    (dataset / "questions.jsonl").write_text(json.dumps(item) + "\n")
    argv = ["--url", auth_system.base_url, "--api-key", key, "--dataset", str(dataset)]
    argv += ["--collection", "eval-keyed", "--report-dir", str(tmp_path / "reports"), "--no-progress"]
    code = await asyncio.to_thread(rag_eval, argv)
    out = capfd.readouterr()
    assert code == 0, out.out + out.err
    assert "keyed: 1 questions" in out.out


# --- tenancy: "not yours" looks like "not there", sessions belong to their owner, the audit log ---


def same_error(first: httpx.Response, second: httpx.Response, *ids: str) -> None:
    """Two error answers a caller cannot tell apart: same status, code and message (ids aside)."""

    def shape(response: httpx.Response) -> tuple[int, str, str]:
        error = response.json()["error"]
        message = error["message"]
        for value in ids:
            message = message.replace(value, "<id>")
        return response.status_code, error["code"], message

    assert shape(first) == shape(second), (first.text, second.text)
    assert set(first.json()["error"]) == set(second.json()["error"])


async def test_a_guessed_document_of_another_tenant_is_not_found_like_a_missing_one(auth_system: AuthSystem) -> None:
    guessed, missing = document_id_for("beta", "beta.md"), document_id_for("beta", "no-such-file.md")
    assert guessed == auth_system.beta_doc  # ids come from collection and name: anyone can compute them
    key = (await create_key(auth_system, {"alpha": ["read", "write"]}))["key"]
    async with auth_system.client(key) as http:
        for method in ("GET", "DELETE"):
            existing = await http.request(method, f"/v1/documents/{guessed}")
            absent = await http.request(method, f"/v1/documents/{missing}")
            assert_error(existing, 404, "document_not_found")
            same_error(existing, absent, guessed, missing)
    async with auth_system.client(ADMIN_KEY) as admin:
        assert (await admin.get(f"/v1/documents/{guessed}")).json()["status"] == "indexed"


async def test_a_session_id_used_by_another_tenant_starts_a_new_conversation(auth_system: AuthSystem) -> None:
    async with auth_system.client(ADMIN_KEY) as admin:
        asked = await admin.post("/v1/query", json=question("beta vault combination?", "beta", session_id="taken-s1"))
        assert asked.status_code == 200, asked.text
    key = (await create_key(auth_system, {"alpha": ["read"]}))["key"]
    async with auth_system.client(key) as http:
        # The id is taken in beta by someone else: this key cannot tell, it simply converses.
        own = await http.post("/v1/query", json=question("alpha door code?", "alpha", session_id="taken-s1"))
        assert own.status_code == 200, own.text
        mine = (await http.get("/v1/sessions/taken-s1")).json()
        assert mine["collection"] == "alpha"
        assert len(mine["turns"]) == 1
    async with auth_system.client(ADMIN_KEY) as admin:
        theirs = (await admin.get("/v1/sessions/taken-s1")).json()
        assert theirs["collection"] == "beta"
        assert len(theirs["turns"]) == 1


async def test_a_session_belongs_to_the_key_or_tenant_that_started_it(auth_system: AuthSystem) -> None:
    owner = (await create_key(auth_system, {"alpha": ["read"]}))["key"]
    reads_everything = (await create_key(auth_system, {"*": ["read", "write"]}))["key"]
    async with auth_system.client(owner) as http:
        asked = await http.post("/v1/query", json=question("alpha door code?", "alpha", session_id="owned-s1"))
        assert asked.status_code == 200, asked.text
    async with auth_system.client(reads_everything) as other:
        read = await other.get("/v1/sessions/owned-s1")
        assert_error(read, 404, "not_found")
        same_error(read, await other.get("/v1/sessions/never-s1"), "owned-s1", "never-s1")
        assert_error(await other.delete("/v1/sessions/owned-s1"), 404, "not_found")
        extended = await other.post("/v1/query", json=question("And who opens it?", "alpha", session_id="owned-s1"))
        assert extended.status_code == 200, extended.text
    async with auth_system.client(owner) as http:
        session = (await http.get("/v1/sessions/owned-s1")).json()
        assert [t["question"] for t in session["turns"]] == ["alpha door code?"]  # not read, extended or deleted

    first = (await create_key(auth_system, {"alpha": ["read"]}, tenant="acme"))["key"]
    second = (await create_key(auth_system, {"alpha": ["read"]}, tenant="acme"))["key"]
    async with auth_system.client(first) as http:
        asked = await http.post("/v1/query", json=question("alpha door code?", "alpha", session_id="acme-s1"))
        assert asked.status_code == 200, asked.text
    async with auth_system.client(second) as http:  # keys of one tenant share its conversations
        assert len((await http.get("/v1/sessions/acme-s1")).json()["turns"]) == 1


async def test_key_names_with_line_breaks_or_markup_are_refused(auth_system: AuthSystem) -> None:
    async with auth_system.client(ADMIN_KEY) as admin:
        for name in ("ops\nadmin", "ci\r\nX-Injected: 1", "<script>alert(1)</script>", 'bot" onload="x', " padded"):
            response = await admin.post("/v1/keys", json={"name": name, "collections": {"alpha": ["read"]}})
            assert_error(response, 422, "invalid_request")
            assert "name must be 1-64 letters, digits, spaces" in response.json()["error"]["message"]
        ok = await admin.post("/v1/keys", json={"name": "CI bot (prod) #2", "collections": {"alpha": ["read"]}})
        assert ok.status_code == 201, ok.text
        bad_tenant = await admin.post(
            "/v1/keys", json={"name": "x", "collections": {"alpha": ["read"]}, "tenant": "A B"}
        )
        assert_error(bad_tenant, 422, "invalid_request")


async def test_the_audit_log_records_keys_documents_and_refused_requests(auth_system: AuthSystem) -> None:
    async with auth_system.client(ADMIN_KEY) as admin:
        start = (await admin.get("/v1/audit", params={"limit": 1000})).json()["next"]
        created = (
            await admin.post("/v1/keys", json={"name": "audited bot", "collections": {"alpha": ["read", "write"]}})
        ).json()
    writer = created["key"]
    async with auth_system.client(writer) as http:
        accepted = await upload(http, "audited.md", b"# Audited\n\nThe audited pond holds three koi.\n", "alpha")
        assert accepted.status_code == 202, accepted.text
        document_id = accepted.json()["document_id"]
        assert (await wait_for_status(http, document_id))["status"] == "indexed"
        assert (await http.delete(f"/v1/documents/{document_id}")).status_code == 202
        assert_error(await http.post("/v1/query", json=question("vault?", "beta")), 403, "forbidden")
        assert_error(await http.get(f"/v1/documents/{auth_system.beta_doc}"), 404, "document_not_found")
        assert_error(await http.get("/v1/audit"), 403, "forbidden")  # only admin keys read it
    async with auth_system.client("rag_0123456789abcdef_" + "C" * 43) as stranger:
        assert_error(await stranger.get("/v1/collections"), 401, "unauthorized")
    async with auth_system.client(ADMIN_KEY) as admin:
        assert (await admin.delete(f"/v1/keys/{created['id']}")).status_code == 204
        body = (await admin.get("/v1/audit", params={"after": start, "limit": 1000})).json()
        by_writer = (await admin.get("/v1/audit", params={"after": start, "actor": created["id"]})).json()["events"]
        refusals = (await admin.get("/v1/audit", params={"after": start, "action": "request_refused"})).json()["events"]

    events = body["events"]
    assert body["next"] == events[-1]["seq"]
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    made = next(e for e in events if e["action"] == "key_created" and e["target"] == created["id"])
    assert made["actor"] == "admin"
    assert made["details"]["name"] == "audited bot"
    assert made["details"]["scope:alpha"] == "read,write"
    revoked = next(e for e in events if e["action"] == "key_revoked")
    assert revoked["target"] == created["id"]
    assert revoked["actor"] == "admin"
    actions = [(e["action"], e.get("status")) for e in by_writer]
    assert actions == [
        ("document_uploaded", None),
        ("document_deleted", None),
        ("request_refused", 403),
        ("request_refused", 404),
        ("request_refused", 403),
    ], actions
    assert all(e["actor_name"] == "audited bot" for e in by_writer)
    uploaded = by_writer[0]
    assert uploaded["collection"] == "alpha"
    assert uploaded["target"] == document_id
    assert uploaded["details"]["source"] == "audited.md"
    assert uploaded["request_id"] == accepted.json()["request_id"]
    assert by_writer[3]["target"] == auth_system.beta_doc
    assert by_writer[3]["collection"] == "beta"
    anonymous = [e for e in refusals if e["actor"] == "anonymous"]
    assert anonymous
    assert anonymous[-1]["status"] == 401
    assert anonymous[-1]["path"] == "/v1/collections"
    assert all(e["action"] == "request_refused" for e in refusals)
    assert writer not in json.dumps(body)
    assert ADMIN_KEY not in json.dumps(body)


async def test_a_rate_limited_request_is_in_the_audit_log(auth_system: AuthSystem) -> None:
    created = await create_key(auth_system, {"alpha": ["read"]}, rate_limit_per_min=1)
    async with auth_system.client(created["key"]) as http:
        assert (await http.get("/v1/collections")).status_code == 200
        assert_error(await http.get("/v1/collections"), 429, "rate_limited")
    async with auth_system.client(ADMIN_KEY) as admin:
        events = (await admin.get("/v1/audit", params={"actor": created["id"], "action": "request_refused"})).json()
    assert [(e["status"], e["path"]) for e in events["events"]] == [(429, "/v1/collections")]
