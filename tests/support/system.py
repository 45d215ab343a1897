"""What the tests share besides fixtures: paths, the stack options of a test system, the ``System`` handle."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path

from fastapi import FastAPI
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rag_devrun.corpus import LoadResult
from rag_devrun.stack import Stack, StackOptions
from rag_gateway.deps import Gateway

ROOT = Path(__file__).resolve().parents[2]


def model_folder(setting: str, name: str) -> Path:
    """Where ``make model`` put a model folder: its own setting, else ``$RAG_DATA_DIR/models/<name>``
    (the Makefile's rule), relative paths from the repository root where make runs."""
    data_dir = ROOT / os.environ.get("RAG_DATA_DIR", "data")
    return ROOT / os.environ.get(setting, str(data_dir / "models" / name))


MODEL_DIR = model_folder("RAG_MODEL_DIR", "all-MiniLM-L6-v2-int8")
RERANKER_DIR = model_folder("RAG_RETRIEVER_RERANKER_MODEL_DIR", "ms-marco-MiniLM-L-12-v2-int8")
SECOND_DIR = model_folder("RAG_SECOND_MODEL_DIR", "bge-small-en-v1.5-int8")
SAMPLE_CORPUS = ROOT / "samples" / "orbitly" / "corpus"
UPLOAD_LIMIT = 2 * 1024 * 1024


def stack_options(data_dir: Path, nats_url: str, model_dir: Path, **overrides: Mapping[str, object]) -> StackOptions:
    store = {"model_dir": model_dir, "qdrant_path": data_dir / "qdrant"}
    # The answer cache is off here: tests ask the same questions to check what each stage does with
    # them. Its own tests turn it on (tests/e2e/test_answer_cache.py).
    no_cache = {"answer_cache": False}
    merged: dict[str, dict[str, object]] = {
        "ingest": dict(store),
        "retriever": {**store, **no_cache},
        "generator": {"model_dir": model_dir},
        "evaluator": {"model_dir": model_dir, **no_cache},
        "gateway": dict(no_cache),
    }
    for service, values in overrides.items():
        merged.setdefault(service, {}).update(values)
    return StackOptions(data_dir=data_dir, nats_url=nats_url, port=0, metrics=False, overrides=merged)


class System:
    """The running system as the e2e tests see it."""

    def __init__(self, stack: Stack, spans: InMemorySpanExporter, corpus: LoadResult) -> None:
        self.stack, self.spans, self.corpus = stack, spans, corpus

    @property
    def base_url(self) -> str:
        return self.stack.base_url

    @property
    def gateway(self) -> Gateway:
        """The running gateway's broker, settings and metrics, for tests that inject a fault."""
        assert self.stack.server is not None, "the system runs without a gateway"
        app = self.stack.server.config.app
        assert isinstance(app, FastAPI)
        gateway: Gateway = app.state.gateway
        return gateway


def origin_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{host}:{port}"
