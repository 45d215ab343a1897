"""Local folders against a collection: which files to upload, which documents to delete (pure)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rag_common.wire.formats import SUPPORTED_EXTENSIONS
from rag_common.wire.messages import DocumentStatus


def local_files(folder: Path) -> dict[str, Path]:
    """Supported files under ``folder`` by their relative POSIX path (the source name they get)."""
    if not folder.is_dir():
        raise NotADirectoryError(f"{folder} is not a folder")
    found = (p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in SUPPORTED_EXTENSIONS)
    return {p.relative_to(folder).as_posix(): p for p in sorted(found)}


def skipped_files(folder: Path) -> dict[str, str]:
    """Files under ``folder`` that ``local_files`` leaves out, by relative path, each with why."""
    supported = ", ".join(SUPPORTED_EXTENSIONS)
    skipped = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix.lower() not in SUPPORTED_EXTENSIONS:
            kind = f"type {path.suffix}" if path.suffix else "file without an extension"
            skipped[path.relative_to(folder).as_posix()] = f"unsupported {kind} (supported: {supported})"
    return skipped


def file_hash(path: Path) -> str:
    """The SHA-256 the gateway records as ``content_hash``."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class SyncPlan:
    """What ``rag ingest`` will do to make a collection match a folder, shown before it is done."""

    upload: list[str] = field(default_factory=list)  # new or changed (or failed before)
    unchanged: list[str] = field(default_factory=list)
    delete: list[DocumentStatus] = field(default_factory=list)  # in the collection, gone from the folder


def plan_sync(local: Mapping[str, str], remote: Iterable[DocumentStatus], delete_missing: bool) -> SyncPlan:
    """Compare local ``{source: sha256}`` with the collection's documents.

    A file is uploaded when the collection lacks it, holds other bytes, or failed to index it; a
    document is deleted (only with ``delete_missing``) when its source is no longer in the folder.
    """
    plan = SyncPlan()
    by_source = {r.source: r for r in remote if r.status != "deleting"}
    for source, digest in sorted(local.items()):
        record = by_source.get(source)
        if record is None or record.content_hash != digest or record.status == "failed":
            plan.upload.append(source)
        else:
            plan.unchanged.append(source)
    if delete_missing:
        plan.delete = [r for source, r in sorted(by_source.items()) if source not in local]
    return plan
