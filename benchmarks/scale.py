"""Retrieval cost against corpus size: in-process retrieval p50 at ~1.6k and ~20k chunks.

For each embedded backend (``local``: qdrant-client local mode; ``edge``: Qdrant Edge), one store
in a temporary folder is filled with a generated corpus (``benchmarks.corpus.synthetic_corpus``:
product handbooks, ingest's own chunking and payloads), then ``Retriever.retrieve`` (query
embedding + hybrid search + the retriever's selection, query cache off) is timed at 1.6k chunks,
the corpus is grown to 20k (5k for local mode, whose writes are slow), and it is timed again. The
ratio p50(20k) / p50(1.6k) is the issue's figure (target ≤ 2).

Vectors: BM25 vectors are the real ones for every chunk; dense vectors are the model's for the
first ``DENSE_BASE`` chunk texts and, for the rest, jittered copies of those (renormalised): the
model embeds ~12 chunks/s here, 20k chunks would take half an hour, and neither backend's dense
search depends on the values (both scan every vector: local mode always, Edge without a built
HNSW index). Questions are real and embedded by the model at every retrieval.

While the corpus is written (one ``replace_document`` per document in a worker thread, as the
ingest service does), a probe task on the event loop measures how late its 5 ms sleeps wake up:
the longest is the loop stall the store's calls cause (a call that holds the GIL stalls it). The
same probe then runs as long without writes: on a loaded machine the loop also waits for a core.

    .venv/bin/python -m benchmarks.scale                 # edge 1.6k → 20k, local 1.6k → 5k
    .venv/bin/python -m benchmarks.scale --backends edge --large 8000
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.corpus import TOPICS, BenchCorpus, synthetic_corpus
from benchmarks.overhead import cpu_seconds
from rag_common.store.contract import ChunkRecord, Store
from rag_common.store.embedding import Embedder, SparseVector, get_embedder
from rag_common.store.factory import open_store
from rag_common.wire.messages import IngestRequested, Query, QueryRouted, Route
from rag_ingest.pipeline import chunk_payload, embedding_texts, make_chunks
from rag_ingest.settings import IngestSettings
from rag_retriever.search import Retriever
from rag_retriever.settings import RetrieverSettings

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL_DIR = ROOT / "data" / "models" / "all-MiniLM-L6-v2-int8"
SMALL, LARGE = 1600, 20_000
# Local mode writes slowly (each replacement filters every point in Python): grown to 5k only.
LOCAL_LARGE = 5000
BACKENDS = ("edge", "local")
DENSE_BASE = 64
COLLECTION = "scale"
PROBE_S = 0.005


@dataclass
class Prepared:
    """The corpus as store writes: one (document id, records) per document, in order."""

    documents: list[tuple[str, list[ChunkRecord]]]
    questions_small: list[str]  # about documents within the first SMALL chunks
    seconds: float

    def upto(self, chunks: int) -> int:
        """How many documents make the first ``chunks`` chunks (at least one)."""
        total = 0
        for i, (_, records) in enumerate(self.documents):
            total += len(records)
            if total >= chunks:
                return i + 1
        return len(self.documents)


@dataclass
class ScalePoint:
    chunks: int
    p50_ms: float
    cpu_p50_ms: float
    samples: int
    loaded_s: float  # writing the chunks added since the previous point
    max_stall_ms: float  # the longest event-loop stall while writing them
    idle_stall_ms: float  # the longest in as long (10 s at most) without writing: the machine's noise
    wall_ms: list[float] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "chunks": self.chunks,
            "p50_ms": round(self.p50_ms, 2),
            "cpu_p50_ms": round(self.cpu_p50_ms, 2),
            "samples": self.samples,
            "write_s": round(self.loaded_s, 1),
            "max_loop_stall_ms": round(self.max_stall_ms, 1),
            "idle_loop_stall_ms": round(self.idle_stall_ms, 1),
        }


def prepare(embedder: Embedder, large: int, small: int, folder: Path) -> Prepared:
    started = time.perf_counter()
    settings = IngestSettings()
    corpus: BenchCorpus = synthetic_corpus(large, folder, embedder, settings, max_questions=0)
    rng = random.Random(11)
    documents: list[tuple[str, list[ChunkRecord]]] = []
    base: list[list[float]] = []
    questions: list[str] = []
    total = 0
    for i, doc in enumerate(corpus.documents):
        request = IngestRequested(
            request_id="scale",
            document_id=f"doc{i}",
            collection=COLLECTION,
            source=doc.source,
            object_name="-",
            content_hash="v1",
            size=len(doc.data),
        )
        chunks = make_chunks(request, doc.data, embedder, settings)
        texts = embedding_texts(request, chunks, settings)
        sparse = [SparseVector(s.indices.tolist(), s.values.tolist()) for s in embedder.sparse.embed(texts)]
        missing = min(len(texts), max(0, DENSE_BASE - len(base)))
        if missing:
            base.extend(embedder.embed_dense(texts[:missing]))
        dense = [base[total + j] if total + j < DENSE_BASE else _jitter(base, rng) for j in range(len(texts))]
        records = [
            ChunkRecord(c.chunk_index, d, s, chunk_payload(request, c, settings).stored())
            for c, d, s in zip(chunks, dense, sparse, strict=True)
        ]
        documents.append((request.document_id, records))
        if total < small:
            product = re.sub(r"^# (.*) handbook.*", r"\1", doc.data.decode().splitlines()[0])
            questions += [f"What is the {attribute} of {product}?" for _, attribute, _ in TOPICS]
        total += len(records)
    random.Random(5).shuffle(questions)
    return Prepared(documents, questions, time.perf_counter() - started)


def _jitter(base: list[list[float]], rng: random.Random) -> list[float]:
    vector = [x + rng.gauss(0.0, 0.03) for x in rng.choice(base)]
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]


async def loop_lag(seconds: float, stop: asyncio.Event | None = None) -> float:
    """The longest a 5 ms sleep overslept on this event loop (ms), for ``seconds`` or until ``stop``."""
    worst = 0.0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end and not (stop and stop.is_set()):
        before = time.perf_counter()
        await asyncio.sleep(PROBE_S)
        worst = max(worst, time.perf_counter() - before - PROBE_S)
    return worst * 1000


async def write(store: Store, documents: Sequence[tuple[str, list[ChunkRecord]]]) -> tuple[float, float, float]:
    """Write the documents from a worker thread, as ingest does: (seconds, longest loop stall while
    writing, longest loop stall in as long without writing (the machine's own noise), in ms)."""
    done = asyncio.Event()
    probe = asyncio.create_task(loop_lag(3600.0, done))
    started = time.perf_counter()
    try:
        for document_id, records in documents:
            await asyncio.to_thread(store.replace_document, COLLECTION, document_id, "v1", records)
    finally:
        done.set()
        worst = await probe
    seconds = time.perf_counter() - started
    return seconds, worst, await loop_lag(min(seconds, 10.0))


def time_retrieval(
    retriever: Retriever, questions: list[str], count: int, seconds: float
) -> tuple[list[float], list[float]]:
    queries = [
        QueryRouted(
            query=Query(request_id=f"s{i}", gateway_id="scale", question=q, collection=COLLECTION),
            route=Route(tier="fast"),
        )
        for i, q in enumerate(questions)
    ]
    for query in queries[:3]:  # warm-up, and the calibration of this collection size
        retriever.retrieve(query)
    wall: list[float] = []
    cpu: list[float] = []
    deadline = time.perf_counter() + seconds
    for i in range(count):
        if time.perf_counter() > deadline and len(wall) >= 5:
            break
        query = queries[i % len(queries)]
        c0, t0 = cpu_seconds(), time.perf_counter()
        retriever.retrieve(query)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((cpu_seconds() - c0) * 1000)
    return wall, cpu


async def measure_backend(
    backend: str,
    prepared: Prepared,
    embedder: Embedder,
    folder: Path,
    sizes: tuple[int, int],
    count: int,
    seconds: float,
    model_dir: Path,
) -> list[ScalePoint]:
    store = open_store(None, folder / backend, backend=backend)  # type: ignore[arg-type]
    settings = RetrieverSettings(model_dir=model_dir, qdrant_path=folder / backend, query_cache_size=0)
    retriever = Retriever(settings, embedder, store)
    points: list[ScalePoint] = []
    written = 0
    try:
        store.ensure_collection(COLLECTION)
        for size in sizes:
            upto = prepared.upto(size)
            loaded_s, stall_ms, idle_ms = await write(store, prepared.documents[written:upto])
            written = upto
            chunks = await asyncio.to_thread(store.count, COLLECTION)
            wall, cpu = await asyncio.to_thread(time_retrieval, retriever, prepared.questions_small, count, seconds)
            p50, cpu_p50 = statistics.median(wall), statistics.median(cpu)
            points.append(ScalePoint(chunks, p50, cpu_p50, len(wall), loaded_s, stall_ms, idle_ms, wall))
    finally:
        await asyncio.to_thread(store.close)
    return points


Record = Callable[[str, float, str, str, dict[str, Any] | None], None]


async def run(
    embedder: Embedder,
    model_dir: Path,
    record: Record,
    *,
    backends: Sequence[str] = BACKENDS,
    sizes: dict[str, tuple[int, int]] | None = None,
    count: int = 40,
    seconds: float = 20.0,
) -> dict[str, list[ScalePoint]]:
    """Measure every backend; ``record(name, value, unit, description, detail)`` gets each figure."""
    sizes = {b: (sizes or {}).get(b, (SMALL, LOCAL_LARGE if b == "local" else LARGE)) for b in backends}
    results: dict[str, list[ScalePoint]] = {}
    with tempfile.TemporaryDirectory(prefix="rag-bench-scale-") as tmp:
        work = Path(tmp)
        largest, smallest = max(s[1] for s in sizes.values()), min(s[0] for s in sizes.values())
        prepared = await asyncio.to_thread(prepare, embedder, largest, smallest, work / "corpus")
        print(
            f"  scale corpus: {sum(len(r) for _, r in prepared.documents)} chunks prepared in {prepared.seconds:.0f}s"
        )
        for backend in backends:
            small, large = points = await measure_backend(
                backend, prepared, embedder, work, sizes[backend], count, seconds, model_dir
            )
            results[backend] = points
            what = "Retriever.retrieve in-process (query embedding + hybrid search), p50"
            record(
                f"scale.{backend}.small_p50_ms", small.p50_ms, "ms", f"{what}, {small.chunks} chunks", small.to_json()
            )
            record(
                f"scale.{backend}.large_p50_ms", large.p50_ms, "ms", f"{what}, {large.chunks} chunks", large.to_json()
            )
            record(
                f"scale.{backend}.ratio",
                large.p50_ms / small.p50_ms,
                "ratio",
                f"retrieval p50 at {large.chunks} chunks / at {small.chunks} chunks (target ≤ 2)",
                None,
            )
            record(
                f"scale.{backend}.cpu_ratio",
                large.cpu_p50_ms / small.cpu_p50_ms,
                "ratio",
                f"process CPU per retrieval, p50, at {large.chunks} / at {small.chunks} chunks",
                {"small_cpu_p50_ms": small.cpu_p50_ms, "large_cpu_p50_ms": large.cpu_p50_ms},
            )
            record(
                f"scale.{backend}.max_loop_stall_ms",
                max(small.max_stall_ms, large.max_stall_ms),
                "ms",
                "longest event-loop stall while the corpus was written from a worker thread",
                {"idle_loop_stall_ms": max(small.idle_stall_ms, large.idle_stall_ms)},
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="edge,local")
    parser.add_argument("--small", type=int, default=SMALL)
    parser.add_argument("--large", type=int, default=None, help=f"default {LARGE} ({LOCAL_LARGE} for local)")
    parser.add_argument("--count", type=int, default=40, help="retrievals per size (bounded by --seconds too)")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL_DIR)
    args = parser.parse_args()
    embedder = get_embedder(args.model_dir.resolve())
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]

    def record(name: str, value: float, unit: str, description: str, detail: dict[str, Any] | None) -> None:
        print(f"  {name:<36} {value:>9.2f} {unit:<6} {detail or ''}", flush=True)

    asyncio.run(
        run(
            embedder,
            args.model_dir.resolve(),
            record,
            backends=backends,
            sizes={b: (args.small, args.large or (LOCAL_LARGE if b == "local" else LARGE)) for b in backends},
            count=args.count,
            seconds=args.seconds,
        )
    )


if __name__ == "__main__":
    main()
