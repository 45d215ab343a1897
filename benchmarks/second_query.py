"""What ``RAG_SECOND_DENSE`` costs per question, paired: every question asked three ways in one
process on the same ingested store (the sweep's: product chunking, cached passage vectors, local
mode in memory), in alternating order so load drifts hit the three alike: the setting off, on with
the two question embeddings at once (as built), and on with them one after the other.

    RAG_MODEL_DIR=$PWD/data/models/all-MiniLM-L6-v2-int8 nice -n 19 .venv/bin/python -m benchmarks.second_query \\
        --dataset samples/projectdocs --rounds 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from qdrant_client import QdrantClient

from benchmarks.retrieval_sweep import CachedEmbedder, CachedSecond, ingest
from rag_common.store.embedding import get_embedder, get_second_embedder
from rag_common.store.vectors import VectorStore
from rag_common.wire.messages import Query, QueryRouted, Route
from rag_retriever.search import Retriever
from rag_retriever.settings import RetrieverSettings
from rag_scorecard.dataset import load_dataset

WAYS = ("off", "at_once", "one_after_the_other")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--cache", type=Path, default=Path("data/sweep-cache"))
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    dataset = load_dataset(args.dataset)
    on = RetrieverSettings(second_dense=True, query_cache_size=0)  # every question embedded each time
    inner = get_embedder(on.resolved_model_dir)
    second = CachedSecond(
        get_second_embedder(on.resolved_second_model_dir), args.cache / f"{dataset.name}-bge-small.pkl"
    )
    store = VectorStore(QdrantClient(location=":memory:"), local=True)
    ingest(dataset.corpus, "sweep", CachedEmbedder(inner, args.cache / f"{dataset.name}.pkl"), store, second=second)
    retrievers = {
        "off": Retriever(on.model_copy(update={"second_dense": False}), inner, store),
        "at_once": Retriever(on, inner, store, second.inner),
        "one_after_the_other": Retriever(on, inner, store, second.inner),
    }
    retrievers["one_after_the_other"]._second_queries = None  # the bge embedding then runs inside search()
    for retriever in retrievers.values():
        retriever.calibration("sweep")
    wall: dict[str, list[float]] = {way: [] for way in WAYS}
    cpu: dict[str, list[float]] = {way: [] for way in WAYS}
    questions = [q for q in dataset.questions if q.expect.expected_sources and not q.conversation_id]
    for round_ in range(args.rounds):
        for i, question in enumerate(questions):
            routed = QueryRouted(
                query=Query(request_id=question.id, gateway_id="g", question=question.question, collection="sweep"),
                route=Route(tier="fast"),
            )
            passages: dict[str, list[str]] = {}
            for way in WAYS if (i + round_) % 2 == 0 else reversed(WAYS):
                t0, c0 = time.perf_counter(), time.process_time()
                passages[way] = [p.source for p in retrievers[way].retrieve(routed).retrieval.passages]
                wall[way].append((time.perf_counter() - t0) * 1000)
                cpu[way].append((time.process_time() - c0) * 1000)
            if passages["at_once"] != passages["one_after_the_other"]:
                raise AssertionError(f"{question.id}: the two ways of embedding gave different passages")
    print(
        json.dumps(
            {
                "dataset": dataset.name,
                "questions": len(questions),
                "rounds": args.rounds,
                **{f"{way}_ms_p50": round(statistics.median(wall[way]), 1) for way in WAYS},
                **{f"{way}_cpu_ms_p50": round(statistics.median(cpu[way]), 1) for way in WAYS},
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
