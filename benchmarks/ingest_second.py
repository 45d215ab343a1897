"""What the second dense model (``RAG_SECOND_DENSE``) costs at ingest: a dataset's corpus through the
ingest service's own ``index_document`` (parse, chunk, embed, write to a fresh Qdrant Edge shard),
with the setting off and on, in one process; wall seconds and CPU seconds of the process (every
thread). (The shard's folder size says nothing here: its files are allocated ahead, 229 MB for 98
chunks either way; the second vector is 384 float32 values, 1.5 KB a chunk, plus its index.)

    RAG_MODEL_DIR=$PWD/data/models/all-MiniLM-L6-v2-int8 nice -n 19 .venv/bin/python -m benchmarks.ingest_second \\
        --dataset ../shared/eval/anthropic-docs
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path

from rag_common.store.edge import EdgeStore
from rag_common.store.embedding import SecondEmbedder, get_embedder, get_second_embedder
from rag_common.wire.messages import IngestRequested
from rag_devrun.corpus import corpus_files
from rag_ingest.pipeline import index_document
from rag_ingest.settings import IngestSettings

WARM_UP = "# Warm-up\n\nBoth models' sessions are made before anything is timed."


def run(corpus: Path, settings: IngestSettings, second: SecondEmbedder | None, folder: Path) -> dict[str, float]:
    embedder = get_embedder(settings.resolved_model_dir)
    store = EdgeStore(folder)
    files = [(path.relative_to(corpus).as_posix(), path.read_bytes()) for path in corpus_files(corpus)]
    chunks = 0
    c0, started = time.process_time(), time.perf_counter()
    for source, data in files:
        request = IngestRequested(
            request_id="bench",
            document_id=hashlib.sha1(source.encode()).hexdigest(),
            collection="bench",
            source=source,
            object_name=source,
            content_hash=hashlib.sha256(data).hexdigest(),
            size=len(data),
        )
        chunks += index_document(request, data, embedder, store, settings, second=second).chunks
    seconds, cpu = time.perf_counter() - started, time.process_time() - c0
    store.close()
    return {
        "documents": len(files),
        "chunks": chunks,
        "seconds": round(seconds, 1),
        "cpu_s": round(cpu, 1),
        "cpu_ms_per_chunk": round(cpu * 1000 / chunks, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--order", default="off,on", help="runs in this order (off, on), comma-separated")
    args = parser.parse_args(argv)
    settings = IngestSettings()
    embedder = get_embedder(settings.resolved_model_dir)
    second = get_second_embedder(settings.resolved_second_model_dir)
    embedder.embed_passages([WARM_UP])
    second.embed_passages([WARM_UP])
    for label in args.order.split(","):
        on = label == "on"
        with tempfile.TemporaryDirectory() as tmp:
            figures = run(
                args.dataset / "corpus",
                settings.model_copy(update={"second_dense": on}),
                second if on else None,
                Path(tmp) / "edge",
            )
        print(json.dumps({"dataset": args.dataset.name, "second_dense": on, **figures}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
