"""Typed clients of the gateway's HTTP API, sync (``RagClient``) and async (``AsyncRagClient``).

Both retry a request that met 429 or a 5xx (or no connection) with tenacity, waiting what the
server's ``Retry-After`` asks (capped) or else an exponential back-off with jitter.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel
from tenacity import AsyncRetrying, Retrying, retry_if_exception, stop_after_attempt

from rag_client.bodies import SseParser, page_params, query_body, stream_item, upload_parts
from rag_client.errors import RagError, RetryAfterOrBackoff, error_from, worth_retrying
from rag_client.folders import local_files
from rag_common.wire.http_api import Answer, CollectionInfo, CollectionList, DocumentAccepted, DocumentList
from rag_common.wire.messages import DocumentStatus

DEFAULT_URL = "http://127.0.0.1:8000"
FINAL_STATES = frozenset({"indexed", "unchanged", "failed"})
T = TypeVar("T", bound=BaseModel)


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
            "retry": retry_if_exception(worth_retrying),
            "wait": RetryAfterOrBackoff(self.max_retry_wait_s),
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
        body = query_body(question, collection, session_id, filters, selected_text)
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
        body = query_body(question, collection, session_id, filters, selected_text)

        def opened() -> httpx.Response:
            response = self.http.send(self.http.build_request("POST", "/v1/query/stream", json=body), stream=True)
            if response.status_code >= 400:
                response.read()
                response.close()
                raise error_from(response)
            return response

        response = Retrying(sleep=self._sleep, **self._retry_options())(opened)
        parser = SseParser()
        try:
            for line in itertools.chain(response.iter_lines(), [""]):
                if (complete := parser.feed(line)) and (item := stream_item(*complete)) is not None:
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
        files, data = upload_parts(Path(path), name, collection, metadata)
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
        body = query_body(question, collection, session_id, filters, selected_text)
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
        body = query_body(question, collection, session_id, filters, selected_text)

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
            parser = SseParser()
            async for line in response.aiter_lines():
                if (complete := parser.feed(line)) and (item := stream_item(*complete)) is not None:
                    yield item
            if (complete := parser.end()) and (item := stream_item(*complete)) is not None:
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
        files, data = upload_parts(Path(path), name, collection, metadata)
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
