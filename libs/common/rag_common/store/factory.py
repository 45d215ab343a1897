"""Opening the vector store: the one place that picks a backend for a location.

It sits above the backends (``vectors``: the ``Store`` protocol and qdrant-client, for a Qdrant
server and local mode; ``edge``: Qdrant Edge, the embedded default), so neither backend imports the
other or the opener, and the Rust engine is loaded only when Edge is chosen.
"""

from __future__ import annotations

import threading
from functools import cache
from pathlib import Path
from typing import Literal

from qdrant_client import QdrantClient

from rag_common.config.settings import StoreSettings
from rag_common.store.contract import Store
from rag_common.store.vectors import VectorStore

_stores_lock = threading.Lock()
Backend = Literal["local", "edge"]
EDGE_FOLDER = "edge"  # the Edge shards' folder inside the store path, beside local mode's files


@cache
def _open(url: str | None, path: str | None, api_key: str | None, backend: Backend) -> Store:
    if url:
        return VectorStore(QdrantClient(url=url, api_key=api_key), local=False)
    assert path is not None
    if backend == "edge":
        from rag_common.store.edge import EdgeStore  # the Rust engine loads only when chosen

        folder = Path(path) / EDGE_FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        return EdgeStore(folder)
    Path(path).mkdir(parents=True, exist_ok=True)
    return VectorStore(QdrantClient(path=path), local=True)


def open_store(url: str | None, path: Path | None, api_key: str | None = None, backend: Backend = "edge") -> Store:
    """The process-wide store for a location, so the processes of one runner share it.

    A Qdrant server (``url``), else the embedded ``backend`` in a local folder (``path``).
    """
    with _stores_lock:
        return _open(url, str(path.resolve()) if path and not url else None, api_key, backend if not url else "local")


def configured_store(settings: StoreSettings, path: Path | None = None) -> Store:
    """The store a service's settings name (``path`` overrides the settings' folder)."""
    return open_store(
        settings.qdrant_url, path or settings.resolved_qdrant_path, settings.qdrant_api_key, settings.vector_backend
    )
