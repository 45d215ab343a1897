"""The document rules both the gateway and ingest rely on: ids, object names, the unchanged rule."""

from __future__ import annotations

import pytest

from rag_common.store.documents import (
    content_hash,
    document_id_for,
    hash_of_stored_version,
    indexed_outcome,
    legacy_object_name,
    object_name,
    stored_version,
    upload_unchanged,
)
from rag_common.wire.messages import DocumentStatus, IngestRequested
from rag_common.wire.messages.ingest import DocumentState

pytestmark = pytest.mark.unit


def record(status: DocumentState, version: str = "h1") -> DocumentStatus:
    return DocumentStatus(document_id="d", collection="c", source="a.md", status=status, content_hash=version)


def test_the_same_name_in_the_same_collection_is_the_same_document() -> None:
    assert document_id_for("c", "guides/setup.md") == document_id_for("c", "guides/setup.md")
    assert document_id_for("c", "guides/setup.md") != document_id_for("c", "admin/setup.md")
    assert document_id_for("c", "setup.md") != document_id_for("other", "setup.md")
    assert len(document_id_for("c", "setup.md")) == 32  # a valid key-value key and URL segment


def test_each_version_has_its_own_object_name() -> None:
    first, second = content_hash(b"one"), content_hash(b"two")
    assert object_name("c", "d", first) == f"c/d/{first}" != object_name("c", "d", second)
    assert legacy_object_name("c", "d") == "c/d"


def test_a_stored_version_keeps_the_bytes_hash_and_the_settings_digest() -> None:
    version = stored_version("abc", "1234")
    assert version == "abc:1234"
    assert hash_of_stored_version(version) == "abc"
    assert hash_of_stored_version(None) == ""


@pytest.mark.parametrize(
    ("status", "version", "unchanged"),
    [
        ("indexed", "h1", True),
        ("unchanged", "h1", True),
        ("indexed", "h2", False),  # other bytes
        ("queued", "h1", False),  # not indexed yet: the bytes may still be needed
        ("failed", "h1", False),
        ("deleting", "h1", False),
    ],
)
def test_an_upload_is_unchanged_only_when_those_bytes_are_indexed(
    status: DocumentState, version: str, unchanged: bool
) -> None:
    assert upload_unchanged(record(status), version) is unchanged


def test_a_first_upload_is_never_unchanged() -> None:
    assert upload_unchanged(None, "h1") is False


def test_an_indexed_version_is_unchanged_unless_this_request_indexed_it() -> None:
    request = IngestRequested(
        request_id="r2", document_id="d", source="a.md", object_name="o", content_hash="h", size=1
    )
    assert indexed_outcome("r1", request) == "unchanged"
    assert indexed_outcome("r2", request) == "indexed"  # its status write was lost: repaired, not "unchanged"
