"""Which files `rag ingest` uploads and which documents `--sync` deletes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from rag_client.folders import file_hash, local_files, plan_sync, skipped_files
from rag_common.wire.messages import DocumentStatus

pytestmark = pytest.mark.unit


def record(source: str, content: bytes, status: str = "indexed") -> DocumentStatus:
    return DocumentStatus(
        document_id=source,
        collection="c",
        source=source,
        status=status,
        content_hash=hashlib.sha256(content).hexdigest(),
    )


def test_new_changed_and_failed_files_are_uploaded_unchanged_are_not() -> None:
    local = {
        name: hashlib.sha256(data).hexdigest()
        for name, data in {"a.md": b"a", "b.md": b"b2", "c.md": b"c", "d.md": b"d"}.items()
    }
    remote = [
        record("b.md", b"b1"),
        record("c.md", b"c"),
        record("d.md", b"d", status="failed"),
        record("gone.md", b"x"),
    ]
    plan = plan_sync(local, remote, delete_missing=False)
    assert plan.upload == ["a.md", "b.md", "d.md"]
    assert plan.unchanged == ["c.md"]
    assert plan.delete == []


def test_sync_deletes_documents_whose_file_vanished() -> None:
    remote = [record("keep.md", b"k"), record("gone.md", b"g"), record("going.md", b"x", status="deleting")]
    plan = plan_sync({"keep.md": hashlib.sha256(b"k").hexdigest()}, remote, delete_missing=True)
    assert [r.source for r in plan.delete] == ["gone.md"]


def test_local_files_are_supported_files_by_relative_path(tmp_path: Path) -> None:
    (tmp_path / "guides").mkdir()
    (tmp_path / "guides" / "setup.md").write_text("# Setup")
    (tmp_path / "notes.txt").write_text("n")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    files = local_files(tmp_path)
    assert list(files) == ["guides/setup.md", "notes.txt"]
    assert file_hash(files["notes.txt"]) == hashlib.sha256(b"n").hexdigest()
    with pytest.raises(NotADirectoryError):
        local_files(tmp_path / "missing")


def test_every_file_left_out_is_named_with_why(tmp_path: Path) -> None:
    (tmp_path / "deep").mkdir()
    (tmp_path / "a.md").write_text("# A")
    (tmp_path / "B.PDF").write_bytes(b"%PDF")
    (tmp_path / "deep" / "sheet.xlsx").write_bytes(b"PK")
    (tmp_path / "LICENSE").write_text("MIT")
    skipped = skipped_files(tmp_path)
    assert set(skipped) == {"deep/sheet.xlsx", "LICENSE"}
    assert skipped["deep/sheet.xlsx"].startswith("unsupported type .xlsx (supported: .md")
    assert skipped["LICENSE"].startswith("unsupported file without an extension")
    assert set(skipped).isdisjoint(local_files(tmp_path))
