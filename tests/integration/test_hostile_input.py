"""No input makes the gateway fail: every route, fed hostile values, answers below 500.

The gateway runs in this process on a real nats-server with auth on; a stand-in pipeline answers
the questions it queues. Each route the app serves is walked (a new route is fuzzed as soon as it
exists), and each of its path parameters, query parameters and body fields in turn takes each
hostile value: huge and negative numbers, deep nesting, NUL, lone surrogates escaped in JSON,
right-to-left marks, overlong strings. Bounded: a fixed list of values, each request once.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute

from rag_devrun.natsserver import LocalNatsServer
from tests.support.http import upload
from tests.support.inprocess import ADMIN_KEY, answering_pipeline, bearer, gateway_app, gateway_settings
from tests.support.routes import api_routes

pytestmark = pytest.mark.integration

COLLECTION = "fuzz"
DEEP = 3000
# What a path or query parameter may be sent as (already percent-encoded where marked raw).
HOSTILE_TEXT: list[tuple[str, bool]] = [
    ("1e12", False),
    (str(2**64), False),
    (str(2**64 - 2), False),  # the largest audit page start: still a 200
    (str(2**63), False),
    ("253402300799", False),  # the last second of year 9999: still a 200
    ("253402300800", False),
    ("-1", False),
    ("-9223372036854775809", False),
    ("1e308", False),
    ("inf", False),
    ("nan", False),
    ("\x00", False),
    ("\u202e\u200fevil\u200e", False),
    ("x" * 10_000, False),
    ("[" * DEEP, False),
    ("%ED%A0%80", True),  # a surrogate's UTF-8 bytes: not valid UTF-8
    ("%FF%FE", True),
]
# What a JSON body field may be set to, as JSON text.
HOSTILE_JSON: list[str] = [
    "1" + "0" * 30,
    str(2**64),
    str(-(2**63) - 1),
    "-1",
    "1e308",
    "-1e308",
    "0.5",
    '"1e12"',
    "[" * DEEP + "]" * DEEP,
    '{"a":' * DEEP + "1" + "}" * DEEP,
    '"\\u0000"',
    '"\\ud800"',
    '"a\\udfffb"',
    '["\\ud83d"]',
    '{"\\udc00": "x"}',
    '"\\u202e\\u200fevil\\u200e"',
    '"' + "x" * 200_000 + '"',
    "null",
    "true",
    "[]",
    "{}",
]
# A request each body route accepts, whose fields are replaced one at a time.
VALID_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/query"): {"question": "What is the default port?", "collection": COLLECTION},
    ("POST", "/v1/query/stream"): {"question": "What is the default port?", "collection": COLLECTION},
    ("POST", "/v1/chat/completions"): {"model": COLLECTION, "messages": [{"role": "user", "content": "Port?"}]},
    ("POST", "/v1/assessments"): {"collection": COLLECTION, "counts": {"mcq": 1}},
    ("POST", "/v1/keys"): {"name": "fuzzed", "collections": {COLLECTION: ["read"]}},
    ("PUT", "/v1/collections/{name}/profile"): {"assistant_name": "Help desk"},
}
UPLOAD = ("POST", "/v1/documents")
MULTIPART_FIELDS = ("collection", "metadata", "filename")
TIME_LIMIT_S = 240.0


@dataclass(frozen=True)
class Probe:
    method: str
    url: str
    what: str
    content: bytes | None = None
    files: dict[str, tuple[str, bytes]] | None = None
    data: dict[str, str] | None = None


def served_routes() -> list[tuple[str, APIRoute]]:
    return [(method, route) for route in api_routes() for method in sorted(route.methods or ())]


def encoded(value: str, raw: bool) -> str:
    return value if raw else quote(value, safe="")


def url_of(route: APIRoute, path_values: dict[str, str], query: str = "") -> str:
    path = route.path_format
    for name, value in path_values.items():
        path = path.replace("{" + name + "}", value)
    return path + (f"?{query}" if query else "")


def parameters(app: FastAPI, method: str, route: APIRoute) -> dict[str, list[str]]:
    """The route's parameter names by place ("path", "query"), as its OpenAPI operation lists them."""
    operation = app.openapi()["paths"].get(route.path, {}).get(method.lower(), {})
    names: dict[str, list[str]] = {"path": [], "query": []}
    for parameter in operation.get("parameters", []):
        names.setdefault(parameter["in"], []).append(parameter["name"])
    return names


def probes_for(app: FastAPI, method: str, route: APIRoute) -> list[Probe]:
    """Every hostile request for one route: each parameter and field in turn, the rest valid."""
    declared = parameters(app, method, route)
    path_names, query_names = declared["path"], declared["query"]
    plain = {name: "fuzzed-id" for name in path_names}
    key = (method, route.path)
    body = VALID_BODIES.get(key)
    content = json.dumps(body).encode() if body is not None else None
    probes: list[Probe] = []
    for value, raw in HOSTILE_TEXT:
        for name in path_names:
            url = url_of(route, {**plain, name: encoded(value, raw)})
            probes.append(Probe(method, url, f"path {name}={value[:40]!r}", content))
        for name in query_names:
            url = url_of(route, plain, f"{name}={encoded(value, raw)}")
            probes.append(Probe(method, url, f"query {name}={value[:40]!r}", content))
    if body is not None:
        for field in body:
            for fragment in HOSTILE_JSON:
                text = json.dumps({**body, field: "\x00HOSTILE"}).replace('"\\u0000HOSTILE"', fragment)
                probes.append(Probe(method, url_of(route, plain), f"body {field}={fragment[:40]}", text.encode()))
        deep = ("[" * DEEP + "]" * DEEP).encode()
        probes.append(Probe(method, url_of(route, plain), "body nested 3000 deep", deep))
    if key == UPLOAD:
        for field in MULTIPART_FIELDS:
            for fragment in [*HOSTILE_JSON, *(value for value, raw in HOSTILE_TEXT if not raw)]:
                form = {"collection": COLLECTION, "metadata": '{"team": "docs"}', "filename": "guide.md"}
                form[field] = fragment
                filename = form.pop("filename")
                files = {"file": (filename, b"# Guide\n\nThe default port is 8080.\n")}
                probes.append(Probe(method, url_of(route, plain), f"form {field}={fragment[:40]}", None, files, form))
    return probes


@pytest.fixture
async def gateway(
    nats_server: LocalNatsServer,
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient, httpx.ASGITransport]]:
    async with answering_pipeline(nats_server.url), gateway_app(gateway_settings(nats_server.url)) as started:
        _, client, _ = started
        made = await upload(client, "port.md", b"# Port\n\nThe default port is 8080.\n", COLLECTION)
        assert made.status_code == 202, made.text
        yield started


def test_every_body_route_has_a_valid_body_to_fuzz() -> None:
    with_body = {(m, r.path) for m, r in served_routes() if r.body_field is not None}
    assert with_body <= {*VALID_BODIES, UPLOAD}, (
        f"give these routes a valid body: {with_body - {*VALID_BODIES, UPLOAD}}"
    )


async def test_no_hostile_input_gets_a_5xx(gateway: tuple[FastAPI, httpx.AsyncClient, httpx.ASGITransport]) -> None:
    app, client, _ = gateway
    probes = [probe for method, route in served_routes() for probe in probes_for(app, method, route)]
    assert len(probes) > 500  # every route, every parameter: not a handful
    started = time.monotonic()
    failures: list[str] = []
    headers = {**bearer(ADMIN_KEY), "Content-Type": "application/json"}
    for probe in probes:
        if probe.files is not None:
            response = await client.request(
                probe.method, probe.url, files=probe.files, data=probe.data, headers=bearer(ADMIN_KEY)
            )
        else:
            response = await client.request(probe.method, probe.url, content=probe.content, headers=headers)
        if response.status_code >= 500:
            failures.append(
                f"{probe.method} {probe.url[:80]} ({probe.what}): {response.status_code} {response.text[:160]}"
            )
        else:
            assert response.headers["x-request-id"], probe.what
        assert time.monotonic() - started < TIME_LIMIT_S, f"{len(probes)} probes took over {TIME_LIMIT_S} s"
    assert not failures, f"{len(failures)} of {len(probes)} hostile requests got a 5xx:\n" + "\n".join(failures[:40])


async def test_range_errors_name_the_parameter_and_carry_the_request_id(
    gateway: tuple[FastAPI, httpx.AsyncClient, httpx.ASGITransport],
) -> None:
    _, client, _ = gateway
    for query, field in (("since=1e12", "since"), (f"after={2**64}", "after")):
        response = await client.get(f"/v1/audit?{query}", headers=bearer(ADMIN_KEY))
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert error["code"] == "invalid_request"
        assert error["message"].startswith(f"{field}: Input should be less than or equal to")
        assert error["request_id"] == response.headers["x-request-id"]
    deepest = await client.get(f"/v1/audit?after={2**64 - 2}&since=253402300799", headers=bearer(ADMIN_KEY))
    assert deepest.status_code == 200, deepest.text
    assert deepest.json()["events"] == []


async def test_deeply_nested_metadata_is_refused_with_its_reason(
    gateway: tuple[FastAPI, httpx.AsyncClient, httpx.ASGITransport],
) -> None:
    _, client, _ = gateway
    nested = "[" * DEEP + "]" * DEEP
    response = await client.post(
        "/v1/documents",
        files={"file": ("deep.md", b"# Deep\n\nText.\n")},
        data={"collection": COLLECTION, "metadata": nested},
        headers=bearer(ADMIN_KEY),
    )
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_metadata"
    assert "levels deep" in error["message"]
    shallow = await client.post(
        "/v1/documents",
        files={"file": ("shallow.md", b"# Shallow\n\nText.\n")},
        data={"collection": COLLECTION, "metadata": json.dumps({"team": [["a", {"b": "[not a level]"}]]})},
        headers=bearer(ADMIN_KEY),
    )
    assert shallow.status_code == 202, shallow.text
