"""What both clients send and read besides JSON models, built once for the two.

A page's query, a question's body, an upload's parts, and the server-sent events of a streamed
answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rag_client.errors import RagError
from rag_common.wire.http_api import Answer


def page_params(collection: str | None, limit: int | None, after: str | None) -> dict[str, str]:
    """The query of one ``GET /v1/documents`` page (what is None is left to the server's default)."""
    given = {"collection": collection, "limit": str(limit) if limit is not None else None, "after": after}
    return {name: value for name, value in given.items() if value}


class SseParser:
    """Server-sent events line by line: ``feed`` returns ``(event, data)`` when an event is complete."""

    def __init__(self) -> None:
        self.event, self.data = "message", list[str]()

    def feed(self, line: str) -> tuple[str, Any] | None:
        """Take one line; an event when the line completes one."""
        if line.startswith("event:"):
            self.event = line[6:].strip()
        elif line.startswith("data:"):
            self.data.append(line[5:].lstrip(" "))
        elif not line.strip():
            return self.end()
        return None

    def end(self) -> tuple[str, Any] | None:
        """The event collected so far, if it has data, and start the next."""
        event, data = self.event, self.data
        self.event, self.data = "message", []
        return (event, json.loads("\n".join(data))) if data else None


def stream_item(event: str, data: Any) -> str | Answer | None:
    """A streamed event as the caller sees it: a token's text, the final answer, or the error raised."""
    if event == "token":
        return str(data.get("text", ""))
    if event == "done":
        return Answer.model_validate(data)
    if event == "error":
        raise RagError(
            int(data.get("status", 500)), data.get("code", "error"), data.get("message", ""), data.get("request_id", "")
        )
    return None


def query_body(
    question: str, collection: str, session_id: str | None, filters: Mapping[str, Any] | None, selected_text: str | None
) -> dict[str, Any]:
    """The JSON body of a question; what is not given is left out."""
    body: dict[str, Any] = {"question": question, "collection": collection}
    if session_id:
        body["session_id"] = session_id
    if filters:
        body["filters"] = dict(filters)
    if selected_text:
        body["selected_text"] = selected_text
    return body


def upload_parts(
    path: Path, name: str | None, collection: str, metadata: Mapping[str, str] | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The multipart file and form fields of one upload."""
    files = {"file": (name or path.name, path.read_bytes())}
    data = {"collection": collection}
    if metadata:
        data["metadata"] = json.dumps(dict(metadata))
    return files, data
