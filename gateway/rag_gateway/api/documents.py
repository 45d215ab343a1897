"""Uploading, listing, inspecting and deleting documents."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import PurePosixPath
from typing import Annotated

from fastapi import APIRouter, File, Form, Query, Request, UploadFile
from fastapi.responses import JSONResponse
from nats.js.api import ObjectMeta

from rag_common import subjects
from rag_common.formats import SUPPORTED_EXTENSIONS
from rag_common.messages import DeleteRequested, DocumentStatus, IngestRequested
from rag_common.status import StatusStore
from rag_common.vectors import valid_collection
from rag_gateway.deps import Gateway, GatewayDep
from rag_gateway.errors import ApiError, request_id

router = APIRouter(prefix="/v1/documents", tags=["documents"])
_DOC_NS = uuid.UUID("3b4f8a52-98c7-4bd5-8f0e-1b6a9c5d2e71")


def document_id_for(collection: str, source: str) -> str:
    """The same file name in the same collection is the same document: re-uploads replace it."""
    return uuid.uuid5(_DOC_NS, f"{collection}/{source}").hex


def check_collection(collection: str) -> str:
    if not valid_collection(collection):
        raise ApiError(
            422, "invalid_collection", f"collection {collection!r} must be 1-63 lowercase letters, digits, '-' or '_'"
        )
    return collection


def _status_store(gateway: Gateway) -> StatusStore:
    if gateway.status is None or gateway.objects is None:
        raise ApiError(503, "unavailable", "document storage is not ready yet")
    return gateway.status


def _source_name(upload: UploadFile) -> str:
    """The document's source path as the client named it, e.g. ``guides/setup.md``.

    Folders are kept (two ``api.md`` in different folders are different documents); absolute
    paths, ``..`` and empty parts are dropped so a name can never point outside its collection.
    """
    raw = (upload.filename or "").replace("\\", "/")
    parts = [p.strip() for p in raw.split("/") if p.strip() not in ("", ".", "..")]
    name = "/".join(parts)
    if not name:
        raise ApiError(422, "invalid_file", "the upload has no file name")
    if len(name) > 512:
        raise ApiError(422, "invalid_file", "the file name is longer than 512 characters")
    if PurePosixPath(name).suffix.lower() not in SUPPORTED_EXTENSIONS:
        supported = ", ".join(sorted(SUPPORTED_EXTENSIONS))
        raise ApiError(415, "unsupported_media_type", f"{name!r}: unsupported file type; supported: {supported}")
    return name


async def _read_limited(upload: UploadFile, limit: int) -> bytes:
    data = await upload.read(limit + 1)
    if len(data) > limit:
        raise ApiError(413, "too_large", f"file is larger than the {limit} byte limit")
    if not data:
        raise ApiError(422, "empty_file", "the uploaded file is empty")
    return data


def _parse_metadata(raw: str | None) -> dict[str, str]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ApiError(422, "invalid_metadata", f"metadata must be a JSON object: {exc}") from None
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ApiError(422, "invalid_metadata", "metadata must be a JSON object of string keys")
    return {k: str(v) for k, v in value.items()}


@router.post("", status_code=202)
async def upload_document(
    request: Request,
    gateway: GatewayDep,
    file: Annotated[UploadFile, File(description="PDF, Markdown or plain-text document")],
    collection: Annotated[str, Form()] = "default",
    metadata: Annotated[str | None, Form(description="JSON object of string metadata")] = None,
) -> JSONResponse:
    """Store the bytes in the object store, then queue the document for ingest.

    The 202 is sent only after JetStream acknowledged both, so an accepted upload is never lost.
    """
    status_store = _status_store(gateway)
    check_collection(collection)
    source = _source_name(file)
    meta = _parse_metadata(metadata)
    data = await _read_limited(file, gateway.settings.max_upload_bytes)
    rid = request_id(request)
    document_id = document_id_for(collection, source)
    object_name = f"{collection}/{document_id}"
    content_hash = hashlib.sha256(data).hexdigest()
    previous = await status_store.get(document_id)
    stored = previous is not None and previous.content_hash == content_hash and previous.status != "deleting"
    if not stored:  # identical bytes already in the object store are not written again
        await gateway.objects.put(object_name, data, meta=ObjectMeta(name=object_name, description=source))
    status = DocumentStatus(
        document_id=document_id,
        collection=collection,
        source=source,
        status="queued",
        content_hash=content_hash,
        size=len(data),
        chunks=previous.chunks if previous else 0,
        request_id=rid,
        metadata=meta,
    )
    await status_store.put(status)
    message = IngestRequested(
        request_id=rid,
        document_id=document_id,
        collection=collection,
        source=source,
        object_name=object_name,
        content_hash=content_hash,
        size=len(data),
        content_type=file.content_type,
        metadata=meta,
    )
    await gateway.broker.publish(
        message, subjects.INGEST_REQUESTED, stream=subjects.INGEST_STREAM, headers={"Nats-Msg-Id": rid}
    )
    gateway.metrics.uploads.labels("accepted").inc()
    body = {
        "document_id": document_id,
        "status": "queued",
        "source": source,
        "collection": collection,
        "request_id": rid,
    }
    return JSONResponse(body, status_code=202)


@router.get("")
async def list_documents(gateway: GatewayDep, collection: Annotated[str | None, Query()] = None) -> dict[str, object]:
    records = await _status_store(gateway).list(collection)
    return {"documents": [r.model_dump() for r in records]}


@router.get("/{document_id}")
async def get_document(document_id: str, gateway: GatewayDep) -> DocumentStatus:
    record = await _status_store(gateway).get(document_id)
    if record is None:
        raise ApiError(404, "document_not_found", f"no document {document_id!r}")
    return record


@router.delete("/{document_id}", status_code=202)
async def delete_document(document_id: str, request: Request, gateway: GatewayDep) -> JSONResponse:
    store = _status_store(gateway)
    record = await store.get(document_id)
    if record is None:
        raise ApiError(404, "document_not_found", f"no document {document_id!r}")
    rid = request_id(request)
    await store.update(document_id, status="deleting", request_id=rid)
    message = DeleteRequested(request_id=rid, document_id=document_id, collection=record.collection)
    await gateway.broker.publish(
        message, subjects.INGEST_DELETE, stream=subjects.INGEST_STREAM, headers={"Nats-Msg-Id": rid}
    )
    return JSONResponse({"document_id": document_id, "status": "deleting", "request_id": rid}, status_code=202)
