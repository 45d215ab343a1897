"""Uploading, listing, inspecting and deleting documents."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import PurePosixPath
from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile
from nats.js.api import ObjectMeta

from rag_common.store.documents import (
    StatusConflict,
    StatusStore,
    content_hash,
    document_id_for,
    object_name,
    upload_unchanged,
)
from rag_common.wire import names, subjects
from rag_common.wire.formats import SUPPORTED_EXTENSIONS, described
from rag_common.wire.http_api import DocumentAccepted, DocumentList
from rag_common.wire.messages import AuditEvent, DeleteRequested, DocumentStatus, IngestRequested
from rag_common.wire.names import DOCUMENT_ID_RULE, check_source_name, valid_document_id
from rag_gateway.access import Authenticated, authenticate, refused_as_not_found, require
from rag_gateway.audit import where, who
from rag_gateway.auth import Principal, Right
from rag_gateway.deps import Gateway, GatewayDep, ResourcesDep
from rag_gateway.errors import ApiError, client_request_id, request_id
from rag_gateway.openapi import errors
from rag_gateway.resources import Resources

router = APIRouter(prefix="/v1/documents", tags=["documents"], dependencies=[Depends(authenticate)])
log = logging.getLogger("rag.gateway")


def check_collection(collection: str) -> str:
    """The shared collection rule (``rag_common.wire.names``), as this API's 422."""
    try:
        return names.check_collection(collection)
    except ValueError as exc:
        raise ApiError(422, "invalid_collection", str(exc)) from None


def check_document_id(document_id: str) -> str:
    """An id that cannot name a document is a 404 with the rule, never a bucket-key error (500)."""
    if not valid_document_id(document_id):
        shown = document_id if len(document_id) <= 80 else document_id[:80] + "..."
        raise ApiError(404, "document_not_found", f"no document {shown!r}: document ids are {DOCUMENT_ID_RULE}")
    return document_id


def document_not_found(document_id: str) -> ApiError:
    """The one 404 of a document id: missing, deleted, or in a collection the caller may not read
    (ids come from collection and file name, so they can be guessed; the answer must not tell)."""
    return ApiError(404, "document_not_found", f"no document {document_id!r}")


async def readable_record(
    resources: Resources, request: Request, principal: Principal, document_id: str
) -> DocumentStatus:
    """The document's status, when the caller may read its collection: else the same 404 as a missing one."""
    check_document_id(document_id)
    record = await resources.status.get(document_id)
    if record is None:
        raise document_not_found(document_id)
    if not principal.can(record.collection, Right.READ):
        await refused_as_not_found(resources.audit, request, principal, document_id, record.collection)
        raise document_not_found(document_id)
    return record


def _source_name(upload: UploadFile) -> str:
    """The document's source path as the client named it, e.g. ``guides/setup.md``.

    Folders are kept (two ``api.md`` in different folders are different documents); absolute
    paths, ``..`` and empty parts are dropped so a name can never point outside its collection.
    """
    raw = (upload.filename or "").replace("\\", "/")
    try:
        check_source_name(raw)
    except ValueError as exc:
        raise ApiError(422, "invalid_file", str(exc)) from None
    parts = [p.strip() for p in raw.split("/") if p.strip() not in ("", ".", "..")]
    name = "/".join(parts)
    if not name:
        raise ApiError(422, "invalid_file", "the upload has no file name")
    if PurePosixPath(name).suffix.lower() not in SUPPORTED_EXTENSIONS:
        supported = ", ".join(sorted(SUPPORTED_EXTENSIONS))
        raise ApiError(415, "unsupported_media_type", f"{name!r}: unsupported file type; supported: {supported}")
    return name


def file_too_large_message(limit: int) -> str:
    """The 413 of an upload, from this route or from the body limit before the route (same words)."""
    return f"file is larger than the {limit} byte limit"


async def _read_limited(upload: UploadFile, limit: int) -> bytes:
    data = await upload.read(limit + 1)
    if len(data) > limit:
        raise ApiError(413, "too_large", file_too_large_message(limit))
    if not data:
        raise ApiError(422, "empty_file", "the uploaded file is empty")
    return data


MAX_METADATA_CHARS = 8192
# Arrays and objects inside one another: past this, metadata is refused before it is parsed
# (Python's JSON parser recurses once per level, and a few thousand levels exhaust its stack).
MAX_METADATA_DEPTH = 8


def json_nesting(raw: str) -> int:
    """How deep arrays and objects nest in ``raw`` (brackets inside strings do not count);
    counted in one pass without parsing, so any depth is measured safely."""
    depth = deepest = 0
    in_string = escaped = False
    for char in raw:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


# Room in an upload's body for the multipart framing, the collection and the metadata fields.
MULTIPART_OVERHEAD = 64 * 1024


def _parse_metadata(raw: str | None) -> dict[str, str]:
    """Labels stored with every chunk and carried in every ingest message: kept small."""
    if not raw:
        return {}
    if len(raw) > MAX_METADATA_CHARS:
        raise ApiError(422, "invalid_metadata", f"metadata is longer than {MAX_METADATA_CHARS} characters")
    if json_nesting(raw) > MAX_METADATA_DEPTH:
        raise ApiError(
            422, "invalid_metadata", f"metadata nests arrays and objects more than {MAX_METADATA_DEPTH} levels deep"
        )
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ApiError(422, "invalid_metadata", f"metadata must be a JSON object: {exc}") from None
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ApiError(422, "invalid_metadata", "metadata must be a JSON object of string keys")
    return {k: str(v) for k, v in value.items()}


async def retire_cached_answers(status: StatusStore, collection: str) -> None:
    """Move the collection's index version now, so no answer cached before this change is served
    again (ingest moves it once more when the index has changed). Best effort: the change is
    accepted already, and ingest's move is the one the answer cache relies on."""
    try:
        await status.changed(collection)
    except Exception as exc:
        log.warning("collection %s: cached answers not retired now (ingest will): %r", collection, exc)


@asynccontextmanager
async def undone_unless_queued(
    store: StatusStore, before: DocumentStatus | None, after: DocumentStatus
) -> AsyncIterator[None]:
    """Around the ingest publish: when JetStream does not take the message (the caller gets 503),
    the status is put back as it was, so it never says "queued" or "deleting" for nothing."""
    try:
        yield
    except Exception:
        try:
            restored = await store.undo(before, after)
        except Exception as exc:  # NATS is away for this write too: the caller's 503 says try again
            log.warning("document %s: status not restored after a failed publish: %r", after.document_id, exc)
        else:
            log.warning("document %s: not queued; status %s", after.document_id, "restored" if restored else "kept")
        raise


@router.post(
    "",
    status_code=202,
    response_model=DocumentAccepted,
    response_model_exclude_none=True,
    responses=errors(413, 415, 422, 503),
)
async def upload_document(
    request: Request,
    gateway: GatewayDep,
    resources: ResourcesDep,
    principal: Authenticated,
    file: Annotated[UploadFile, File(description=f"The document: {described()}")],
    collection: Annotated[str, Form()] = "default",
    metadata: Annotated[str | None, Form(description="JSON object of string metadata")] = None,
) -> DocumentAccepted:
    """Store the bytes in the object store, then queue the document for ingest.

    The 202 is sent only after JetStream acknowledged both, so an accepted upload is never lost.
    """
    try:
        outcome, accepted = await _upload(request, gateway, resources, principal, file, collection, metadata)
    except ApiError as exc:
        gateway.metrics.uploads.labels("rejected" if exc.status < 500 else "failed").inc()
        raise
    except Exception:
        gateway.metrics.uploads.labels("failed").inc()
        raise
    gateway.metrics.uploads.labels(outcome).inc()
    return accepted


async def _upload(
    request: Request,
    gateway: Gateway,
    resources: Resources,
    principal: Principal,
    file: UploadFile,
    collection: str,
    metadata: str | None,
) -> tuple[str, DocumentAccepted]:
    """Store and queue one upload; the outcome is "unchanged" when these exact bytes are indexed."""
    status_store = resources.status
    check_collection(collection)
    require(principal, collection, Right.WRITE)
    source = _source_name(file)
    meta = _parse_metadata(metadata)
    data = await _read_limited(file, gateway.settings.max_upload_bytes)
    rid = request_id(request)
    document_id = document_id_for(collection, source)
    version = content_hash(data)
    name = object_name(collection, document_id, version)
    unchanged = upload_unchanged(await status_store.get(document_id), version)
    if not unchanged:  # identical bytes already indexed are not written again
        await resources.objects.put(name, data, meta=ObjectMeta(name=name, description=source))
    try:
        before, accepted = await status_store.accept_upload(
            document_id=document_id,
            collection=collection,
            source=source,
            version_hash=version,
            size=len(data),
            request_id=rid,
            metadata=meta,
        )
    except StatusConflict:
        raise ApiError(503, "busy", "too many concurrent uploads of this document; try again") from None
    message = IngestRequested(
        request_id=rid,
        document_id=document_id,
        collection=collection,
        source=source,
        object_name=name,
        content_hash=version,
        size=len(data),
        content_type=file.content_type,
        metadata=meta,
    )
    async with undone_unless_queued(status_store, before, accepted):
        await gateway.broker.publish(
            message, subjects.INGEST_REQUESTED, stream=subjects.INGEST_STREAM, headers={"Nats-Msg-Id": rid}
        )
    log.info("upload %s queued as %s/%s (client_request_id=%s)", rid, collection, source, client_request_id(request))
    await retire_cached_answers(status_store, collection)
    details = {
        "source": source,
        "size": str(len(data)),
        "content_hash": version,
        "unchanged": str(unchanged).lower(),
    }
    await resources.audit.record(
        AuditEvent(
            action="document_uploaded",
            collection=collection,
            target=document_id,
            details=details,
            **who(principal),
            **where(request),
        )
    )
    accepted_body = DocumentAccepted(
        document_id=document_id,
        status="queued",
        source=source,
        collection=collection,
        request_id=rid,
        client_request_id=client_request_id(request) or None,
    )
    return ("unchanged" if unchanged else "accepted"), accepted_body


MAX_PAGE = 1000
# A page's cursor: the collection and the id of the last document it listed.
CURSOR_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}:[0-9a-f]{32}$"


@router.get("", response_model=DocumentList, responses=errors(422, 503))
async def list_documents(
    resources: ResourcesDep,
    principal: Authenticated,
    collection: Annotated[str | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="documents per page")] = 100,
    after: Annotated[
        str | None, Query(pattern=CURSOR_PATTERN, description="a page's `next`: the documents after it")
    ] = None,
) -> DocumentList:
    """Documents of the collections this caller may read (of one, with ``?collection=``), by
    collection and id, ``limit`` at a time; pass ``next`` as ``after`` for the following page."""
    if collection is not None:
        check_collection(collection)
        require(principal, collection, Right.READ)
    start = after.partition(":")[::2] if after else None
    records, last = await resources.status.page(
        collection, readable=lambda name: principal.can(name, Right.READ), after=start, limit=limit
    )
    return DocumentList(documents=records, next=f"{last[0]}:{last[1]}" if last else None)


@router.get("/{document_id}", responses=errors(404, 503))
async def get_document(
    document_id: str, request: Request, resources: ResourcesDep, principal: Authenticated
) -> DocumentStatus:
    return await readable_record(resources, request, principal, document_id)


@router.delete(
    "/{document_id}",
    status_code=202,
    response_model=DocumentAccepted,
    response_model_exclude_none=True,
    responses=errors(404, 503),
)
async def delete_document(
    document_id: str, request: Request, gateway: GatewayDep, resources: ResourcesDep, principal: Authenticated
) -> DocumentAccepted:
    store = resources.status
    record = await readable_record(resources, request, principal, document_id)
    require(principal, record.collection, Right.WRITE)  # it may read it: a 403 tells it nothing new
    rid = request_id(request)
    try:
        marked = await store.start_delete(document_id, rid)
    except StatusConflict:
        raise ApiError(503, "busy", "too many concurrent changes of this document; try again") from None
    if marked is None:
        raise document_not_found(document_id)
    message = DeleteRequested(request_id=rid, document_id=document_id, collection=record.collection)
    async with undone_unless_queued(store, *marked):
        await gateway.broker.publish(
            message, subjects.INGEST_DELETE, stream=subjects.INGEST_STREAM, headers={"Nats-Msg-Id": rid}
        )
    await retire_cached_answers(store, record.collection)
    await resources.audit.record(
        AuditEvent(
            action="document_deleted",
            collection=record.collection,
            target=document_id,
            details={"source": record.source},
            **who(principal),
            **where(request),
        )
    )
    return DocumentAccepted(document_id=document_id, status="deleting", request_id=rid)
