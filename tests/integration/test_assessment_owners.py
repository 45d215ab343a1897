"""An assessment is its creator's tenant's: any other key gets the 404 of an id that never existed.

The gateway runs in this process on a real nats-server with auth on; no service builds the paper
(the assessment stays queued), which is all reading, exporting and watching need.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from rag_devrun.natsserver import LocalNatsServer
from tests.support.http import upload
from tests.support.inprocess import bearer, gateway_app, gateway_settings

pytestmark = pytest.mark.integration

COLLECTION = "course"
UNKNOWN = "0123456789abcdef0123456789abcdef"


async def new_key(admin: httpx.AsyncClient, **fields: Any) -> dict[str, str]:
    response = await admin.post("/v1/keys", json={"name": "k", "collections": {COLLECTION: ["read"]}, **fields})
    assert response.status_code == 201, response.text
    return bearer(response.json()["key"])


@pytest.fixture
async def admin(nats_server: LocalNatsServer) -> AsyncIterator[httpx.AsyncClient]:
    async with gateway_app(gateway_settings(nats_server.url, assessment_timeout_s=0.5)) as (_, client, _):
        made = await upload(client, "notes.md", b"# Notes\n\nThe default port is 8080.\n", COLLECTION)
        assert made.status_code == 202, made.text
        yield client


def not_found_as_unknown(response: httpx.Response, unknown: httpx.Response, assessment_id: str) -> None:
    """The same 404 a random id gets, the id in the message the only difference."""
    assert response.status_code == 404, response.text
    assert response.headers["content-type"].startswith("application/json")
    error, expected = response.json()["error"], unknown.json()["error"]
    assert error["code"] == expected["code"] == "assessment_not_found"
    assert error["message"] == expected["message"].replace(UNKNOWN, assessment_id)
    assert error["request_id"] == response.headers["x-request-id"]


async def test_only_keys_of_the_creating_tenant_find_an_assessment(admin: httpx.AsyncClient) -> None:
    creator = await new_key(admin, tenant="acme")
    colleague = await new_key(admin, tenant="acme")
    outsider = await new_key(admin, tenant="globex")
    no_tenant = await new_key(admin)
    created = await admin.post(
        "/v1/assessments", json={"collection": COLLECTION, "counts": {"mcq": 1}}, headers=creator
    )
    assert created.status_code == 202, created.text
    assessment_id = created.json()["id"]

    for own in (creator, colleague):
        mine = await admin.get(f"/v1/assessments/{assessment_id}", headers=own)
        assert mine.status_code == 200, mine.text
        assert mine.json()["blueprint"]["collection"] == COLLECTION
        assert (await admin.get(f"/v1/assessments/{assessment_id}/export", headers=own)).status_code == 409

    for other in (outsider, no_tenant):
        for suffix in ("", "/export", "/export?format=gift", "/events"):
            unknown = await admin.get(f"/v1/assessments/{UNKNOWN}{suffix}", headers=other)
            theirs = await admin.get(f"/v1/assessments/{assessment_id}{suffix}", headers=other)
            not_found_as_unknown(theirs, unknown, assessment_id)
            assert "8080" not in theirs.text


async def test_events_of_an_unknown_or_forbidden_id_are_a_404_before_any_stream(admin: httpx.AsyncClient) -> None:
    creator = await new_key(admin, tenant="acme")
    outsider = await new_key(admin, tenant="globex")
    created = await admin.post(
        "/v1/assessments", json={"collection": COLLECTION, "counts": {"mcq": 1}}, headers=creator
    )
    assessment_id = created.json()["id"]
    for path, key in (
        (f"/v1/assessments/{UNKNOWN}/events", creator),
        ("/v1/assessments/not-an-id/events", creator),
        (f"/v1/assessments/{assessment_id}/events", outsider),
    ):
        response = await admin.get(path, headers=key)
        assert response.status_code == 404, (path, response.status_code, response.text)
        assert response.json()["error"]["code"] == "assessment_not_found"
    # The owner's stream opens: the queued state, then the timeout of an assessment nobody builds.
    watched = await admin.get(f"/v1/assessments/{assessment_id}/events", headers=creator)
    assert watched.status_code == 200
    assert watched.headers["content-type"].startswith("text/event-stream")
    assert "event: progress" in watched.text
    assert '"code":"timeout"' in watched.text.replace(" ", "")
