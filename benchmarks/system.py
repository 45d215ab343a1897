"""Starting what a benchmark needs: a private nats-server and the system on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from rag_common.config.settings import StoreSettings
from rag_common.store.factory import configured_store
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import StackOptions

ALL_SERVICES = ("ingest", "router", "retriever", "generator", "evaluator")
QUERY_SERVICES = ("router", "retriever", "generator", "evaluator")


@contextlib.asynccontextmanager
async def private_nats(store_dir: Path) -> AsyncIterator[LocalNatsServer]:
    """A nats-server with JetStream on a random 127.0.0.1 port and its own store; stopped on exit."""
    server = LocalNatsServer(store_dir)
    await asyncio.to_thread(server.start)
    try:
        yield server
    finally:
        await asyncio.to_thread(server.stop)


def stack_options(
    data_dir: Path,
    nats_url: str,
    model_dir: Path,
    *,
    services: Sequence[str] = ALL_SERVICES,
    replicas: dict[str, int] | None = None,
) -> StackOptions:
    """The system on ``nats_url``, gateway on a free 127.0.0.1 port, no metrics ports, store in ``data_dir``."""
    store = {"model_dir": model_dir, "qdrant_path": qdrant_path(data_dir)}
    return StackOptions(
        data_dir=data_dir,
        nats_url=nats_url,
        host="127.0.0.1",
        port=0,
        metrics=False,
        overrides={"ingest": dict(store), "retriever": dict(store), "generator": {"model_dir": model_dir}},
        services=services,
        replicas=dict(replicas or {}),
    )


def qdrant_path(data_dir: Path) -> Path:
    return data_dir / "qdrant"


def close_store(data_dir: Path) -> None:
    """Close the process-wide embedded store of ``data_dir`` (its folder is about to go)."""
    configured_store(StoreSettings(), qdrant_path(data_dir)).close()
