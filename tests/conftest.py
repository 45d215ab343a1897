"""Shared fixtures: a real nats-server per stack, the whole system in one process, an HTTP client."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rag_devrun.corpus import load_corpus
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.support.levels import pytest_collection_modifyitems  # noqa: F401 (the level check, a hook)
from tests.support.system import (
    MODEL_DIR,
    RERANKER_DIR,
    ROOT,
    SAMPLE_CORPUS,
    SECOND_DIR,
    UPLOAD_LIMIT,
    System,
    origin_of,
    stack_options,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The offline model folder (``make test`` assembles it; assemble here if run directly)."""
    if not (MODEL_DIR / "model.onnx").exists():
        subprocess.run([sys.executable, str(ROOT / "scripts" / "assemble_model.py"), str(MODEL_DIR)], check=True)
    return MODEL_DIR


@pytest.fixture(scope="session")
def reranker_dir() -> Path:
    """The offline cross-encoder folder (``make test`` assembles it; assemble here if run directly)."""
    if not (RERANKER_DIR / "model.onnx").exists():
        script = ROOT / "scripts" / "assemble_model.py"
        subprocess.run([sys.executable, str(script), "--reranker", str(RERANKER_DIR)], check=True)
    return RERANKER_DIR


@pytest.fixture(scope="session")
def second_dir() -> Path:
    """The second dense model's folder (``make test`` assembles it; assemble here if run directly)."""
    if not (SECOND_DIR / "model.onnx").exists():
        script = ROOT / "scripts" / "assemble_model.py"
        subprocess.run([sys.executable, str(script), "--second", str(SECOND_DIR)], check=True)
    return SECOND_DIR


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[LocalNatsServer]:
    """A fresh nats-server with JetStream on a random 127.0.0.1 port, for one test."""
    server = LocalNatsServer(tmp_path / "nats")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def other_origin() -> Iterator[socket.socket]:
    """A listening 127.0.0.1 socket for a second web origin (a site embedding the widget); the
    system's gateway allows it by CORS. Bound before the gateway starts, so its port is known."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    try:
        yield sock
    finally:
        sock.close()


@pytest.fixture(scope="session")
async def system(
    tmp_path_factory: pytest.TempPathFactory, model_dir: Path, other_origin: socket.socket
) -> AsyncIterator[System]:
    """Every service and the gateway on a private nats-server, with the sample corpus loaded."""
    data_dir = tmp_path_factory.mktemp("system")
    server = LocalNatsServer(data_dir / "nats")
    server.start()
    spans = InMemorySpanExporter()
    gateway = {"max_upload_bytes": UPLOAD_LIMIT, "cors_origins": [origin_of(other_origin)]}
    options = stack_options(data_dir, server.url, model_dir, gateway=gateway)
    options.span_processors = [SimpleSpanProcessor(spans)]
    try:
        async with Stack(options) as stack:
            async with httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
                corpus = await load_corpus(client, SAMPLE_CORPUS, timeout_s=300)
            yield System(stack, spans, corpus)
    finally:
        server.stop()


@pytest.fixture
async def client(system: System) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=system.base_url, timeout=60) as http:
        yield http
