"""Retrieval-only evaluation in one process: the ingest and retriever code, no NATS, no HTTP.

The per-technique table of docs/EVALUATION.md comes from this: each technique is switched by its
``RAG_INGEST_*`` / ``RAG_RETRIEVER_*`` setting, and a run ingests the dataset's corpus into an
in-memory Qdrant with exactly the product's chunking and payloads (``rag_ingest.pipeline``), then asks
every question through ``Retriever.retrieve`` and scores the passages with the harness's formulas.
Embeddings are cached on disk by text (``--cache``), so a run whose chunk texts did not change
embeds nothing again; the figures are the same as the harness's because the code path is the same
from the parser to the ranked passages (the harness adds upload, NATS and the generator).

    .venv/bin/python -m benchmarks.retrieval_sweep --dataset ../shared/eval/contoso
    .venv/bin/python -m benchmarks.retrieval_sweep --dataset samples/orbitly \
        --variant default: --variant mmr:lab=mmr,mmr_lambda=0.7 --variant top8:top_k=8

A variant's ``lab=<name>[+<name>]`` adds ranking steps measured worse than the default, which
left the service (``benchmarks.retrieval_lab.LAB_STEPS``; their parameters ride along as further
``key=value`` pairs); every other key is a retriever setting.

With ``RAG_SECOND_DENSE=true`` chunks and questions are embedded with the second dense model too
(its passage vectors cached as MiniLM's, in ``<dataset>-bge-small.pkl``) and the retriever fuses
three rankings, as the product does with that setting.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from qdrant_client import QdrantClient

from benchmarks.retrieval_lab import add_lab_steps
from rag_common.store.embedding import (
    BM25_AVG_LEN,
    Embedder,
    SecondEmbedder,
    SparseVector,
    get_embedder,
    get_second_embedder,
)
from rag_common.store.vectors import ChunkRecord, VectorStore
from rag_common.wire.messages import IngestRequested, Query, QueryRouted, Route
from rag_devrun.corpus import corpus_files
from rag_ingest.pipeline import chunk_payload, embedding_texts, make_chunks
from rag_ingest.settings import IngestSettings
from rag_retriever.search import Retriever, describe
from rag_retriever.settings import RetrieverSettings
from rag_scorecard.dataset import load_dataset
from rag_scorecard.metrics import score_retrieval, summarize_retrieval


class CachedEmbedder:
    """Wraps the embedder: passage vectors are looked up by text hash before the model is run.

    Only dense vectors come from the cache; BM25 vectors are computed every time (no model run),
    so a changed ``RAG_INGEST_BM25_AVG_LEN`` takes effect without re-embedding anything.
    """

    def __init__(self, inner: Embedder, cache: Path | None) -> None:
        self.inner = inner
        self.path = cache
        self.store: dict[str, Any] = {}
        if cache and cache.is_file():
            with cache.open("rb") as f:
                self.store = pickle.load(f)
        self.dirty = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_passages(
        self, texts: list[str], *, bm25_avg_len: float = BM25_AVG_LEN
    ) -> tuple[list[list[float]], list[SparseVector]]:
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        todo = [i for i, k in enumerate(keys) if k not in self.store]
        if todo:
            dense = self.inner.embed_dense([texts[i] for i in todo])
            for i, d in zip(todo, dense, strict=True):
                self.store[keys[i]] = d
            self.dirty = True
        # an entry is the dense vector (older caches hold a (dense, sparse) pair)
        vectors = [self.store[k][0] if isinstance(self.store[k], tuple) else self.store[k] for k in keys]
        return vectors, self.inner.embed_sparse(texts, bm25_avg_len=bm25_avg_len)

    def save(self) -> None:
        if self.path and self.dirty:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("wb") as f:
                pickle.dump(self.store, f)


class CachedSecond:
    """The second dense model's passage vectors by text hash, kept on disk between runs (as
    ``CachedEmbedder``'s); counts the CPU time of what it had to embed."""

    def __init__(self, inner: SecondEmbedder, cache: Path | None) -> None:
        self.inner = inner
        self.path = cache
        self.store: dict[str, list[float]] = {}
        if cache and cache.is_file():
            with cache.open("rb") as f:
                self.store = pickle.load(f)
        self.embedded = 0
        self.cpu_s = 0.0

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        todo = [i for i, k in enumerate(keys) if k not in self.store]
        if todo:
            c0 = time.process_time()
            for i, vector in zip(todo, self.inner.embed_passages([texts[i] for i in todo]), strict=True):
                self.store[keys[i]] = vector
            self.cpu_s += time.process_time() - c0
            self.embedded += len(todo)
        return [self.store[k] for k in keys]

    def save(self) -> None:
        if self.path and self.embedded:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("wb") as f:
                pickle.dump(self.store, f)


def ingest(
    corpus: Path,
    collection: str,
    embedder: CachedEmbedder,
    store: VectorStore,
    settings: IngestSettings | None = None,
    second: CachedSecond | None = None,
) -> int:
    settings = settings or IngestSettings()
    store.ensure_collection(collection)
    total = 0
    for path in corpus_files(corpus):
        source = path.relative_to(corpus).as_posix()
        request = IngestRequested(
            request_id="sweep",
            document_id=hashlib.sha1(source.encode()).hexdigest(),
            collection=collection,
            source=source,
            object_name=source,
            content_hash="v",
            size=path.stat().st_size,
        )
        chunks = make_chunks(request, path.read_bytes(), embedder, settings)  # type: ignore[arg-type]
        texts = embedding_texts(request, chunks, settings)
        dense, sparse = embedder.embed_passages(texts, bm25_avg_len=settings.bm25_avg_len)
        seconds: list[list[float] | None] = (
            list(second.embed_passages(texts)) if second is not None and texts else [None] * len(chunks)
        )
        records = [
            ChunkRecord(
                chunk_index=c.chunk_index,
                dense=d,
                sparse=s,
                payload=chunk_payload(request, c, settings).stored(),
                second_dense=d2,
            )
            for c, d, s, d2 in zip(chunks, dense, sparse, seconds, strict=True)
        ]
        store.replace_document(collection, request.document_id, "v", records)
        total += len(records)
    return total


def parse_variant(spec: str) -> tuple[str, dict[str, str]]:
    """``label:key=value,key=value`` → the label and the retriever settings it overrides."""
    label, _, pairs = spec.partition(":")
    return label, dict(pair.split("=", 1) for pair in pairs.split(",") if pair)


def variant_retriever(
    settings: RetrieverSettings,
    overrides: dict[str, str],
    embedder: Embedder,
    store: VectorStore,
    second: SecondEmbedder | None = None,
) -> Retriever:
    """A retriever with ``overrides``: settings by name, and ``lab`` steps with their parameters
    (any other key); an unknown setting without ``lab`` is an error, not silently ignored."""
    fields = RetrieverSettings.model_fields
    own = {k: v for k, v in overrides.items() if k in fields}
    lab = {k: v for k, v in overrides.items() if k not in fields}
    if lab and "lab" not in lab:
        raise ValueError(f"not a retriever setting: {', '.join(lab)} (a lab step's parameter needs lab=<name>)")
    retriever = Retriever(RetrieverSettings(**{**settings.model_dump(), **own}), embedder, store, second)
    if lab:
        add_lab_steps(retriever, lab.pop("lab"), lab)
    return retriever


def evaluate(
    dataset: Any, retriever: Retriever, inner: Embedder
) -> tuple[dict[str, Any], list[dict[str, Any]], list[tuple[str, str, list[Any]]]]:
    """Every single question with gold sources through ``retriever``: summary, details, misses."""
    retriever.calibration("sweep")
    scores, times, cpu, misses, tokens = [], [], [], [], []
    details: list[dict[str, Any]] = []
    has_page = False
    route = Route(tier="fast")
    for question in dataset.questions:
        if not question.expect.expected_sources or question.conversation_id:
            continue
        has_page = has_page or any(g.page is not None for g in question.expect.expected_sources)
        query = QueryRouted(
            query=Query(request_id=question.id, gateway_id="sweep", question=question.question, collection="sweep"),
            route=route,
        )
        t0, c0 = time.perf_counter(), time.process_time()
        result = retriever.retrieve(query)
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)  # all of this process's threads: less load-dependent
        passages = result.retrieval.passages
        tokens.append(sum(inner.count_tokens(p.text) for p in result.retrieval.passages))
        score = score_retrieval(passages, question.expect.expected_sources)
        scores.append(score)
        details.append(
            {
                "id": question.id,
                "question": question.question,
                "gold": [asdict(g) for g in question.expect.expected_sources],
                "got": [[p.source, p.section, p.page] for p in passages],
                "recall_at_3": score.recall_at_3,
                "mrr_at_3": score.mrr_at_3,
            }
        )
        if not score.hit_at_5:
            misses.append((question.id, question.question, [(p.source, p.section, p.page) for p in passages]))
    summary = asdict(summarize_retrieval(scores, has_page_gold=has_page))
    line = {
        **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in summary.items()},
        "retrieve_ms_p50": round(statistics.median(times), 1),
        "retrieve_cpu_ms_p50": round(statistics.median(cpu), 1),
        "passage_tokens_mean": round(statistics.mean(tokens), 1),
    }
    return line, details, misses


CEILING_DEPTHS = (3, 5, 10, 20, 30, 50)


def recall_ceiling(details: list[dict[str, Any]], depths: tuple[int, ...] = CEILING_DEPTHS) -> dict[int, float]:
    """Per depth k: the recall@3 a perfect reranker of the first k passages would reach, i.e. each
    question's gold sections found in its first k passages (at most 3 of them) over its gold
    sections, averaged as recall@3 is (strict matching: source and section)."""
    ceiling: dict[int, float] = {}
    for k in depths:
        total = 0.0
        for d in details:
            got = {(source, section) for source, section, _ in d["got"][:k]}
            golds = {(g["source"], g["section"]) for g in d["gold"]}
            total += min(3, len(golds & got)) / len(golds) if golds else 0.0
        ceiling[k] = round(total / len(details), 3) if details else 0.0
    return ceiling


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--cache", type=Path, default=Path("data/sweep-cache"))
    parser.add_argument("--label", default="")
    parser.add_argument("--misses", action="store_true", help="print the questions with no gold passage in the top 5")
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="also print the recall@3 a perfect reordering of the first k passages would reach "
        "(ask for more passages with a variant: top_k=50,candidates=50,context_budget_tokens=0,neighbours=0)",
    )
    parser.add_argument("--detail", type=Path, help="write each question's passages and scores here (JSON lines)")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="label:key=value,... retriever settings for one more run on the same ingested store (repeatable)",
    )
    args = parser.parse_args(argv)
    dataset = load_dataset(args.dataset)
    settings = RetrieverSettings()
    inner = get_embedder(settings.resolved_model_dir)
    embedder = CachedEmbedder(inner, args.cache / f"{dataset.name}.pkl")
    second_cache = args.cache / f"{dataset.name}-bge-small.pkl"  # the ensemble benchmark's file
    second = (
        CachedSecond(get_second_embedder(settings.resolved_second_model_dir), second_cache)
        if settings.second_dense
        else None
    )
    store = VectorStore(QdrantClient(location=":memory:"), local=True)
    started = time.perf_counter()
    chunks = ingest(dataset.corpus, "sweep", embedder, store, second=second)
    embedder.save()
    if second is not None:
        second.save()
    ingest_s = time.perf_counter() - started
    variants = [parse_variant(v) for v in args.variant] or [("", {})]
    for label, overrides in variants:
        retriever = variant_retriever(settings, overrides, inner, store, second.inner if second is not None else None)
        run = retriever.settings
        line, details, misses = evaluate(dataset, retriever, inner)
        print(
            json.dumps(
                {
                    "dataset": dataset.name,
                    "label": label or args.label,
                    "second_dense": run.second_dense and run.second_dense_weight > 0,
                    "steps": describe(retriever.steps),
                    "chunks": chunks,
                    "ingest_s": round(ingest_s, 1),
                    **line,
                }
            ),
            flush=True,
        )
        if args.detail:
            path = args.detail if len(variants) == 1 else args.detail.with_suffix(f".{label}.jsonl")
            path.write_text("".join(json.dumps(d) + "\n" for d in details))
        if args.ceiling:
            ceiling = recall_ceiling(details)
            print(json.dumps({"label": label or args.label, "recall_at_3_ceiling": ceiling}), flush=True)
        if args.misses:
            for qid, text, got in misses:
                print(f"MISS {label} {qid}: {text}\n    {got}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
