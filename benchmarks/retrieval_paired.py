"""Retrieval time of two configurations, paired: one process, both stores, questions alternated.

On a machine shared with other jobs, two runs measured one after the other differ by more than
the change being measured; here each question is asked of configuration A and B back to back
(the order reversed in the second round), so both see the same load. CPU time of the process
(all its threads) is reported beside wall-clock time.

    .venv/bin/python -m benchmarks.retrieval_paired --dataset ../shared/eval/contoso \\
        --a context_headers=path,pdf_headings=false,named_source_first=false --b ''
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from qdrant_client import QdrantClient

from benchmarks.retrieval_sweep import CachedEmbedder, ingest, parse_variant
from rag_common.store.embedding import get_embedder
from rag_common.store.vectors import VectorStore
from rag_common.wire.messages import Query, QueryRouted, Route
from rag_ingest.settings import IngestSettings
from rag_retriever.search import Retriever
from rag_retriever.settings import RetrieverSettings
from rag_scorecard.dataset import load_dataset


def configure(spec: str) -> tuple[IngestSettings, RetrieverSettings]:
    """``key=value,...`` over the defaults; a key is an ingest setting or a retriever setting."""
    _, pairs = parse_variant(f"x:{spec}")
    ingest_keys = set(IngestSettings.model_fields)
    ing = {k: v for k, v in pairs.items() if k in ingest_keys}
    ret = {k: v for k, v in pairs.items() if k not in ingest_keys}
    return IngestSettings(**{**IngestSettings().model_dump(), **ing}), RetrieverSettings(
        **{**RetrieverSettings().model_dump(), **ret}
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--cache", type=Path, default=Path("data/sweep-cache"))
    parser.add_argument("--a", default="", help="key=value,... settings of configuration A")
    parser.add_argument("--b", default="", help="key=value,... settings of configuration B")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    dataset = load_dataset(args.dataset)
    base = RetrieverSettings()
    inner = get_embedder(base.resolved_model_dir)
    retrievers: dict[str, Retriever] = {}
    for name, spec in (("a", args.a), ("b", args.b)):
        ing, ret = configure(spec)
        embedder = CachedEmbedder(inner, args.cache / f"{dataset.name}-{name}.pkl")
        store = VectorStore(QdrantClient(location=":memory:"), local=True)
        ingest(dataset.corpus, name, embedder, store, ing)
        embedder.save()
        retrievers[name] = Retriever(ret, inner, store)
        retrievers[name].calibration(name)
    wall: dict[str, list[float]] = {"a": [], "b": []}
    cpu: dict[str, list[float]] = {"a": [], "b": []}
    questions = [q for q in dataset.questions if q.question and not q.conversation_id]
    for round_ in range(args.rounds):
        order = ("a", "b") if round_ % 2 == 0 else ("b", "a")
        for question in questions:
            for name in order:
                routed = QueryRouted(
                    query=Query(
                        request_id=question.id, gateway_id="paired", question=question.question, collection=name
                    ),
                    route=Route(tier="fast"),
                )
                t0, c0 = time.perf_counter(), time.process_time()
                retrievers[name].retrieve(routed)
                wall[name].append((time.perf_counter() - t0) * 1000)
                cpu[name].append((time.process_time() - c0) * 1000)
    print(
        json.dumps(
            {
                "dataset": dataset.name,
                "retrievals": len(wall["a"]),
                **{f"{n}_wall_ms_p50": round(statistics.median(wall[n]), 1) for n in ("a", "b")},
                **{f"{n}_cpu_ms_p50": round(statistics.median(cpu[n]), 1) for n in ("a", "b")},
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
