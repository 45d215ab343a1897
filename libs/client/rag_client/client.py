"""Typed clients of the gateway's HTTP API, sync (``RagClient``) and async (``AsyncRagClient``).

Both retry a request that met 429 or a 5xx (or no connection) with tenacity, waiting what the
server's ``Retry-After`` asks (capped) or else an exponential back-off with jitter.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from rag_client.folders import local_files
from rag_common.wire.http_api import Answer, CollectionInfo, CollectionList, DocumentAccepted, DocumentList
from rag_common.wire.messages import DocumentStatus

DEFAULT_URL = "http://127.0.0.1:8000"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
FINAL_STATES = frozenset({"indexed", "unchanged", "failed"})
T = TypeVar("T", bound=BaseModel)


def page_params(collection: str | None, limit: int | None, after: str | None) -> dict[str, str]:
    """The query of one ``GET /v1/documents`` page (what is None is left to the server's default)."""
    given = {"collection": collection, "limit": str(limit) if limit is not None else None, "after": after}
    return {name: value for name, value in given.items() if value}


class RagError(Exception):
    """An error answer of the API, with its status, code, message and request id."""

    def __init__(
        self, status: int, code: str, message: str, request_id: str = "", retry_after: float | None = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message
        self.request_id, self.retry_after = request_id, retry_after

    @property
    def retryable(self) -> bool:
        """Whether the same request may work when tried again (rate limited, or a gateway busy or restarting)."""
        return self.status in RETRY_STATUSES

    def about(self, source: str) -> RagError:
        """The same error, its message naming the file it is about (a folder upload)."""
        return RagError(self.status, self.code, f"{source}: {self.message}", self.request_id, self.retry_after)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: a number of seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(when - (time.time() if now is None else now), 0.0)


def error_from(response: httpx.Response) -> RagError:
    """The API's error (either shape: ``{"error": {"code", "message"}}``, OpenAI's too) as a ``RagError``."""
    code, message, rid = "error", response.text[:300] or response.reason_phrase, ""
    try:
        detail = response.json().get("error", {})
        code = str(detail.get("code") or detail.get("type") or code)
        message = str(detail.get("message") or message)
        rid = str(detail.get("request_id") or "")
    except (ValueError, AttributeError):
        pass
    rid = rid or response.headers.get("x-request-id", "")
    return RagError(response.status_code, code, message, rid, retry_after_seconds(response.headers.get("retry-after")))


def _retryable(exc: BaseException) -> bool:
    return (isinstance(exc, RagError) and exc.retryable) or isinstance(exc, httpx.TransportError)


class _RetryAfterOrBackoff:
    """tenacity wait: the server's ``Retry-After`` when it sent one, else exponential back-off with jitter."""

    def __init__(self, max_wait_s: float) -> None:
        self.max_wait_s = max_wait_s
        self.backoff = wait_exponential_jitter(initial=0.5, max=max_wait_s, jitter=0.5)

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RagError) and exc.retry_after is not None:
            return min(exc.retry_after, self.max_wait_s)
        return float(self.backoff(state))


class _SseParser:
    """Server-sent events line by line: ``feed`` returns ``(event, data)`` when an event is complete."""

    def __init__(self) -> None:
        self.event, self.data = "message", list[str]()

    def feed(self, line: str) -> tuple[str, Any] | None:
        if line.startswith("event:"):
            self.event = line[6:].strip()
        elif line.startswith("data:"):
            self.data.append(line[5:].lstrip(" "))
        elif not line.strip():
            return self.end()
        return None

    def end(self) -> tuple[str, Any] | None:
        event, data = self.event, self.data
        self.event, self.data = "message", []
        return (event, json.loads("\n".join(data))) if data else None


def _stream_item(event: str, data: Any) -> str | Answer | None:
    if event == "token":
        return str(data.get("text", ""))
    if event == "done":
        return Answer.model_validate(data)
    if event == "error":
        raise RagError(
            int(data.get("status", 500)), data.get("code", "error"), data.get("message", ""), data.get("request_id", "")
        )
    return None


def _query_body(
    question: str, collection: str, session_id: str | None, filters: Mapping[str, Any] | None, selected_text: str | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"question": question, "collection": collection}
    if session_id:
        body["session_id"] = session_id
    if filters:
        body["filters"] = dict(filters)
    if selected_text:
        body["selected_text"] = selected_text
    return body


def _upload_parts(
    path: Path, name: str | None, collection: str, metadata: Mapping[str, str] | None
) -> tuple[dict[str, Any], dict[str, str]]:
    files = {"file": (name or path.name, path.read_bytes())}
    data = {"collection": collection}
    if metadata:
        data["metadata"] = json.dumps(dict(metadata))
    return files, data


class _Base:
    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        timeout_s: float,
        retries: int,
        max_retry_wait_s: float,
    ) -> None:
        self.base_url = (base_url or os.environ.get("RAG_URL") or DEFAULT_URL).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("RAG_API_KEY")
        self.timeout_s = timeout_s
        self.retries = retries
        self.max_retry_wait_s = max_retry_wait_s

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _retry_options(self) -> dict[str, Any]:
        return {
            "retry": retry_if_exception(_retryable),
            "wait": _RetryAfterOrBackoff(self.max_retry_wait_s),
            "stop": stop_after_attempt(self.retries + 1),
            "reraise": True,
        }


class RagClient(_Base):
    """Blocking client. ``with RagClient("http://host:8000") as rag: rag.ask("...")``."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout_s: float = 90.0,
        retries: int = 3,
        max_retry_wait_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(base_url, api_key, timeout_s, retries, max_retry_wait_s)
        self.http = httpx.Client(
            base_url=self.base_url, timeout=timeout_s, headers=self._headers(), transport=transport
        )
        self._sleep = sleep

    def __enter__(self) -> RagClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self.http.close()

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        def once() -> httpx.Response:
            response = self.http.request(method, path, **kwargs)
            if response.status_code >= 400:
                raise error_from(response)
            return response

        return Retrying(sleep=self._sleep, **self._retry_options())(once)

    def _get(self, path: str, model: type[T], **kwargs: Any) -> T:
        return model.model_validate(self._send("GET", path, **kwargs).json())

    def ask(
        self,
        question: str,
        *,
        collection: str = "default",
        session_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        selected_text: str | None = None,
    ) -> Answer:
        """Ask a question and wait for the whole answer (``POST /v1/query``)."""
        body = _query_body(question, collection, session_id, filters, selected_text)
        return Answer.model_validate(self._send("POST", "/v1/query", json=body).json())

    def stream(
        self,
        question: str,
        *,
        collection: str = "default",
        session_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        selected_text: str | None = None,
    ) -> Iterator[str | Answer]:
        """Yield the answer's text pieces (``str``) as they come, then the final ``Answer``."""
        body = _query_body(question, collection, session_id, filters, selected_text)

        def opened() -> httpx.Response:
            response = self.http.send(self.http.build_request("POST", "/v1/query/stream", json=body), stream=True)
            if response.status_code >= 400:
                response.read()
                response.close()
                raise error_from(response)
            return response

        response = Retrying(sleep=self._sleep, **self._retry_options())(opened)
        parser = _SseParser()
        try:
            for line in itertools.chain(response.iter_lines(), [""]):
                if (complete := parser.feed(line)) and (item := _stream_item(*complete)) is not None:
                    yield item
        finally:
            response.close()

    def collections(self) -> list[CollectionInfo]:
        """The collections this key may read, with their document counts and the key's rights."""
        return self._get("/v1/collections", CollectionList).collections

    def documents(self, collection: str | None = None) -> list[DocumentStatus]:
        """The documents of the collections this key may read (of one, with ``collection``), every page."""
        found: list[DocumentStatus] = []
        after: str | None = None
        while True:
            page = self.documents_page(collection, after=after)
            found += page.documents
            if page.next is None:
                return found
            after = page.next

    def documents_page(
        self, collection: str | None = None, *, limit: int | None = None, after: str | None = None
    ) -> DocumentList:
        """One page of :meth:`documents`; its ``next`` is the ``after`` of the following page (None: the last)."""
        return self._get("/v1/documents", DocumentList, params=page_params(collection, limit, after))

    def document(self, document_id: str) -> DocumentStatus:
        """One document's status: queued, processing, indexed, unchanged, failed or deleting."""
        return self._get(f"/v1/documents/{document_id}", DocumentStatus)

    def delete(self, document_id: str) -> DocumentAccepted:
        """Ask for a document's deletion: its status says ``deleting`` until ingest has removed it."""
        return DocumentAccepted.model_validate(self._send("DELETE", f"/v1/documents/{document_id}").json())

    def upload(
        self,
        path: str | Path,
        *,
        collection: str = "default",
        name: str | None = None,
        metadata: Mapping[str, str] | None = None,
        wait: bool = True,
        timeout_s: float = 300.0,
    ) -> DocumentStatus:
        """Upload one file (``name`` is its source name, default the file name); by default wait until done."""
        files, data = _upload_parts(Path(path), name, collection, metadata)
        accepted = DocumentAccepted.model_validate(self._send("POST", "/v1/documents", files=files, data=data).json())
        if not wait:
            return self.document(accepted.document_id)
        return self.wait_for(accepted.document_id, timeout_s=timeout_s)

    def upload_folder(
        self, folder: str | Path, *, collection: str = "default", wait: bool = True, timeout_s: float = 600.0
    ) -> dict[str, DocumentStatus]:
        """Upload every supported file under ``folder`` (its relative path is its source name)."""
        accepted: dict[str, DocumentAccepted] = {}
        for rel, path in local_files(Path(folder)).items():
            try:
                response = self._send(
                    "POST", "/v1/documents", files={"file": (rel, path.read_bytes())}, data={"collection": collection}
                )
            except RagError as exc:
                raise exc.about(rel) from None
            accepted[rel] = DocumentAccepted.model_validate(response.json())
        if not wait:
            return {rel: self.document(a.document_id) for rel, a in accepted.items()}
        deadline = time.monotonic() + timeout_s
        return {
            rel: self.wait_for(a.document_id, timeout_s=max(deadline - time.monotonic(), 0.1))
            for rel, a in accepted.items()
        }

    def wait_for(self, document_id: str, *, timeout_s: float = 300.0, poll_s: float = 0.2) -> DocumentStatus:
        """Poll a document until it is indexed, unchanged or failed; ``TimeoutError`` after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            record = self.document(document_id)
            if record.status in FINAL_STATES:
                return record
            if time.monotonic() >= deadline:
                raise TimeoutError(f"document {document_id} still {record.status} after {timeout_s:.0f}s")
            time.sleep(poll_s)

    def session(self, session_id: str) -> dict[str, Any]:
        """The turns remembered for one of this key's conversations, oldest first."""
        data: dict[str, Any] = self._send("GET", f"/v1/sessions/{session_id}").json()
        return data

    def forget(self, session_id: str) -> None:
        """Forget one of this key's conversations now, not after its TTL."""
        self._send("DELETE", f"/v1/sessions/{session_id}")


class AsyncRagClient(_Base):
    """The same API for asyncio. ``async with AsyncRagClient(url) as rag: await rag.ask("...")``."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout_s: float = 90.0,
        retries: int = 3,
        max_retry_wait_s: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        super().__init__(base_url, api_key, timeout_s, retries, max_retry_wait_s)
        self.http = httpx.AsyncClient(
            base_url=self.base_url, timeout=timeout_s, headers=self._headers(), transport=transport
        )
        self._sleep = sleep

    async def __aenter__(self) -> AsyncRagClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.http.aclose()

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        async def once() -> httpx.Response:
            response = await self.http.request(method, path, **kwargs)
            if response.status_code >= 400:
                raise error_from(response)
            return response

        result: httpx.Response = await AsyncRetrying(sleep=self._sleep, **self._retry_options())(once)
        return result

    async def ask(
        self,
        question: str,
        *,
        collection: str = "default",
        session_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        selected_text: str | None = None,
    ) -> Answer:
        """Ask a question and wait for the whole answer (``POST /v1/query``)."""
        body = _query_body(question, collection, session_id, filters, selected_text)
        return Answer.model_validate((await self._send("POST", "/v1/query", json=body)).json())

    async def stream(
        self,
        question: str,
        *,
        collection: str = "default",
        session_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        selected_text: str | None = None,
    ) -> AsyncIterator[str | Answer]:
        """Yield the answer's text pieces (``str``) as they come, then the final ``Answer``."""
        body = _query_body(question, collection, session_id, filters, selected_text)

        async def opened() -> httpx.Response:
            request = self.http.build_request("POST", "/v1/query/stream", json=body)
            response = await self.http.send(request, stream=True)
            if response.status_code >= 400:
                await response.aread()
                await response.aclose()
                raise error_from(response)
            return response

        response: httpx.Response = await AsyncRetrying(sleep=self._sleep, **self._retry_options())(opened)
        try:
            parser = _SseParser()
            async for line in response.aiter_lines():
                if (complete := parser.feed(line)) and (item := _stream_item(*complete)) is not None:
                    yield item
            if (complete := parser.end()) and (item := _stream_item(*complete)) is not None:
                yield item
        finally:
            await response.aclose()

    async def collections(self) -> list[CollectionInfo]:
        """The collections this key may read, with their document counts and the key's rights."""
        return CollectionList.model_validate((await self._send("GET", "/v1/collections")).json()).collections

    async def documents(self, collection: str | None = None) -> list[DocumentStatus]:
        """The documents of the collections this key may read (of one, with ``collection``), every page."""
        found: list[DocumentStatus] = []
        after: str | None = None
        while True:
            page = await self.documents_page(collection, after=after)
            found += page.documents
            if page.next is None:
                return found
            after = page.next

    async def documents_page(
        self, collection: str | None = None, *, limit: int | None = None, after: str | None = None
    ) -> DocumentList:
        """One page of :meth:`documents`; its ``next`` is the ``after`` of the following page (None: the last)."""
        response = await self._send("GET", "/v1/documents", params=page_params(collection, limit, after))
        return DocumentList.model_validate(response.json())

    async def document(self, document_id: str) -> DocumentStatus:
        """One document's status: queued, processing, indexed, unchanged, failed or deleting."""
        return DocumentStatus.model_validate((await self._send("GET", f"/v1/documents/{document_id}")).json())

    async def delete(self, document_id: str) -> DocumentAccepted:
        """Ask for a document's deletion: its status says ``deleting`` until ingest has removed it."""
        return DocumentAccepted.model_validate((await self._send("DELETE", f"/v1/documents/{document_id}")).json())

    async def upload(
        self,
        path: str | Path,
        *,
        collection: str = "default",
        name: str | None = None,
        metadata: Mapping[str, str] | None = None,
        wait: bool = True,
        timeout_s: float = 300.0,
    ) -> DocumentStatus:
        """Upload one file (``name`` is its source name, default the file name); by default wait until done."""
        files, data = _upload_parts(Path(path), name, collection, metadata)
        response = await self._send("POST", "/v1/documents", files=files, data=data)
        accepted = DocumentAccepted.model_validate(response.json())
        if not wait:
            return await self.document(accepted.document_id)
        return await self.wait_for(accepted.document_id, timeout_s=timeout_s)

    async def upload_folder(
        self, folder: str | Path, *, collection: str = "default", wait: bool = True, timeout_s: float = 600.0
    ) -> dict[str, DocumentStatus]:
        """Upload every supported file under ``folder`` (its relative path is its source name)."""
        accepted: dict[str, DocumentAccepted] = {}
        for rel, path in local_files(Path(folder)).items():
            try:
                response = await self._send(
                    "POST", "/v1/documents", files={"file": (rel, path.read_bytes())}, data={"collection": collection}
                )
            except RagError as exc:
                raise exc.about(rel) from None
            accepted[rel] = DocumentAccepted.model_validate(response.json())
        if not wait:
            return {rel: await self.document(a.document_id) for rel, a in accepted.items()}
        deadline = time.monotonic() + timeout_s
        results = await asyncio.gather(
            *(self.wait_for(a.document_id, timeout_s=max(deadline - time.monotonic(), 0.1)) for a in accepted.values())
        )
        return dict(zip(accepted, results, strict=True))

    async def wait_for(self, document_id: str, *, timeout_s: float = 300.0, poll_s: float = 0.2) -> DocumentStatus:
        """Poll a document until it is indexed, unchanged or failed; ``TimeoutError`` after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            record = await self.document(document_id)
            if record.status in FINAL_STATES:
                return record
            if time.monotonic() >= deadline:
                raise TimeoutError(f"document {document_id} still {record.status} after {timeout_s:.0f}s")
            await asyncio.sleep(poll_s)

    async def session(self, session_id: str) -> dict[str, Any]:
        """The turns remembered for one of this key's conversations, oldest first."""
        data: dict[str, Any] = (await self._send("GET", f"/v1/sessions/{session_id}")).json()
        return data

    async def forget(self, session_id: str) -> None:
        """Forget one of this key's conversations now, not after its TTL."""
        await self._send("DELETE", f"/v1/sessions/{session_id}")
