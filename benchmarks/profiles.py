"""Profiles that explain the benchmark figures: ``python -m benchmarks.profiles hops|retrieval``.

- ``hops``: greetings over JetStream (the router answers them: requested → router → drafted →
  evaluator, then the final answer on core NATS; no retrieval, no model). What is left is the cost
  of moving a question between stages: the pipeline-overhead figure.
- ``retrieval``: the benchmark's corpus slice indexed straight into a local Qdrant folder (no NATS),
  then ``Retriever.retrieve`` on each question: how its time splits between the query embedding,
  the hybrid search and the rest.
- ``generation``: the same index, then the extractive answer of each retrieved question: how many
  sentences and word pieces the embedding model scores, and what that costs.
- ``ingest``: the slice indexed step by step as ``index_document`` does it (parse, chunk, embed
  dense + BM25, payloads, store write, the handler's store reads), in-process: wall and process
  CPU per chunk of each step, beside the embedder alone on the same texts.

Each prints wall and CPU times unprofiled, then a cProfile run's own time grouped by package.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import logging
import pstats
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from benchmarks.corpus import shared_corpus, synthetic_corpus
from benchmarks.overhead import GREETING, cpu_seconds, nats_client
from benchmarks.system import QUERY_SERVICES, private_nats, stack_options
from rag_common.embedding import Embedder, get_embedder
from rag_common.messages import IngestRequested, Query, QueryRouted, Route
from rag_common.telemetry import setup_telemetry
from rag_common.vectors import ChunkRecord, configured_store
from rag_devrun.stack import Stack
from rag_eval.stats import summarize
from rag_generator.app import Generator
from rag_generator.extractive import candidate_sentences
from rag_generator.scoring import embedding_scorer
from rag_generator.settings import GeneratorSettings
from rag_ingest.pipeline import chunk_payload, embedding_texts, index_document, index_version, make_chunks
from rag_ingest.settings import IngestSettings
from rag_retriever.app import Retriever
from rag_retriever.settings import RetrieverSettings

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "eval" / "anthropic-docs" / "corpus"


def group(filename: str, function: str) -> str:
    if "site-packages/" in filename:
        return filename.split("site-packages/", 1)[1].split("/", 1)[0]
    if str(ROOT) in filename:
        return "project code (libs, services, gateway)"
    if filename.startswith("~") or filename.startswith("<"):
        return "builtin: " + function  # e.g. epoll (waiting: not CPU), socket send, onnxruntime run
    return "stdlib: " + Path(filename).name


def print_profile(profiler: cProfile.Profile, calls: int, what: str) -> None:
    stats = pstats.Stats(profiler)
    totals: Counter[str] = Counter()
    for (filename, _, function), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        totals[group(filename, function)] += own
    everything = sum(totals.values())
    print(f"\nprofiled: {everything * 1000 / calls:.2f} ms own time per {what} (cProfile inflates it), by package:")
    for name, seconds in totals.most_common(18):
        print(f"  {100 * seconds / everything:5.1f}%  {seconds * 1000 / calls:7.3f} ms  {name[:90]}")
    print()
    stats.sort_stats("tottime").print_stats(12)


async def hops(count: int, model_dir: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="rag-bench-hops-") as tmp:
        data_dir = Path(tmp)
        async with (
            private_nats(data_dir / "nats") as server,
            Stack(stack_options(data_dir, server.url, model_dir, services=QUERY_SERVICES)),
            nats_client(server.url) as bus,
        ):
            for _ in range(10):
                await bus.answer(GREETING, 30)
            times: list[float] = []
            cpu = cpu_seconds()
            deadline = time.monotonic() + 60
            while len(times) < count and time.monotonic() < deadline:
                started = time.perf_counter()
                await bus.answer(GREETING, 30)
                times.append((time.perf_counter() - started) * 1000)
            cpu_ms = (cpu_seconds() - cpu) * 1000 / len(times)
            print(f"greeting over NATS, unprofiled: {summarize(times)} ms; process CPU {cpu_ms:.2f} ms per greeting")
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(len(times)):
                await bus.answer(GREETING, 30)
            profiler.disable()
    print_profile(profiler, len(times), "greeting")


@contextlib.contextmanager
def indexed_corpus(
    corpus_dir: Path, target_chunks: int, count: int, model_dir: Path
) -> Iterator[tuple[Embedder, Retriever, list[QueryRouted]]]:
    """The benchmark's corpus slice indexed into a temporary local Qdrant folder (no NATS), a
    retriever over it (``RAG_RETRIEVER_*`` settings from the environment) and its questions."""
    embedder = get_embedder(model_dir)
    settings = IngestSettings()
    with tempfile.TemporaryDirectory(prefix="rag-bench-profile-") as tmp:
        work = Path(tmp)
        if corpus_dir.is_dir():
            corpus = shared_corpus(corpus_dir, target_chunks, work / "corpus", embedder, settings, count)
        else:
            corpus = synthetic_corpus(target_chunks, work / "corpus", embedder, settings, count)
        store = configured_store(settings, work / "qdrant")
        started = time.perf_counter()
        for i, doc in enumerate(corpus.documents):
            request = IngestRequested(
                request_id="profile",
                document_id=f"doc{i}",
                source=doc.source,
                object_name="-",
                content_hash="v1",
                size=len(doc.data),
            )
            index_document(request, doc.data, embedder, store, settings)
        seconds = time.perf_counter() - started
        print(f"indexed {corpus.chunks} chunks of {len(corpus.documents)} documents in {seconds:.1f}s")
        retriever = Retriever(RetrieverSettings(model_dir=model_dir, qdrant_path=work / "qdrant"), embedder, store)
        queries = [
            QueryRouted(query=Query(request_id=f"q{i}", gateway_id="profile", question=q), route=Route(tier="fast"))
            for i, q in enumerate(corpus.questions)
        ]
        try:
            yield embedder, retriever, queries
        finally:
            store.close()


def retrieval(corpus_dir: Path, target_chunks: int, count: int, model_dir: Path) -> None:
    with indexed_corpus(corpus_dir, target_chunks, count, model_dir) as (embedder, retriever, queries):
        for query in queries[:3]:
            retriever.retrieve(query)
        embed, whole, cpu = [], [], []
        for query in queries:
            c0, t0 = cpu_seconds(), time.perf_counter()
            embedder.embed_query(query.query.question)
            t1 = time.perf_counter()
            retriever.retrieve(query)
            t2 = time.perf_counter()
            embed.append((t1 - t0) * 1000)
            whole.append((t2 - t1) * 1000)
            cpu.append((cpu_seconds() - c0) * 1000)
        print(f"embed_query alone:        {summarize(embed)} ms")
        print(f"Retriever.retrieve:       {summarize(whole)} ms (embeds the query again, then searches)")
        print(f"process CPU, both:        {summarize(cpu)} ms")
        profiler = cProfile.Profile()
        profiler.enable()
        for query in queries:
            retriever.retrieve(query)
        profiler.disable()
    print_profile(profiler, len(queries), "retrieve")


def generation(corpus_dir: Path, target_chunks: int, count: int, model_dir: Path) -> None:
    """What the extractive answer scores per question, and what that costs.

    Per question: the passages' size in word pieces, the quotable units found, the units the
    embedding model scores (``RAG_GENERATOR_*`` settings from the environment) and their word
    pieces; then ``Generator.extract`` timed with and without the model, and the scoring alone.
    """
    with indexed_corpus(corpus_dir, target_chunks, count, model_dir) as (embedder, retriever, queries):
        generator = Generator(GeneratorSettings(model_dir=model_dir), None, setup_telemetry("profile"), on_delta=_drop)
        scorer = embedding_scorer(embedder, cache_size=0)  # each answer is drafted three times below
        batches: list[list[str]] = []

        def counting(question: str, sentences: Sequence[str]) -> Sequence[float]:
            batches.append([question, *sentences])
            return scorer(question, sentences)

        retrieved = [retriever.retrieve(q) for q in queries]
        answered = [r for r in retrieved if not r.retrieval.refused and r.retrieval.passages]
        pieces, units, scored, scored_pieces = [], [], [], []
        for r in answered:
            passages = r.retrieval.passages
            pieces.append(sum(embedder.count_tokens(p.text) for p in passages))
            units.append(len(candidate_sentences(passages)))
            generator.scorer, batches = counting, []
            generator.extract(r)
            scored.append(sum(len(b) - 1 for b in batches))
            scored_pieces.append(sum(embedder.count_tokens(t) for b in batches for t in b))
        print(f"{len(answered)} of {len(retrieved)} questions answered (the rest refused by the retriever)")
        print(f"passages per answer:      {summarize([len(r.retrieval.passages) for r in answered])}")
        print(f"word pieces of passages:  {summarize(pieces)}")
        print(f"quotable units:           {summarize(units)}")
        print(f"units the model scores:   {summarize(scored)}")
        print(f"word pieces it embeds:    {summarize(scored_pieces)} (question included)")
        timings: dict[str, list[float]] = {"with the model": [], "words only": [], "scoring alone": []}
        cpu: list[float] = []
        for r in answered:
            generator.scorer = scorer
            c0, t0 = cpu_seconds(), time.perf_counter()
            generator.extract(r)
            t1 = time.perf_counter()
            cpu.append((cpu_seconds() - c0) * 1000)
            generator.scorer = None
            generator.extract(r)
            t2 = time.perf_counter()
            generator.scorer, batches = counting, []
            generator.extract(r)
            t3 = time.perf_counter()
            for batch in batches:
                scorer(batch[0], batch[1:])
            t4 = time.perf_counter()
            timings["with the model"].append((t1 - t0) * 1000)
            timings["words only"].append((t2 - t1) * 1000)
            timings["scoring alone"].append((t4 - t3) * 1000)
        for what, values in timings.items():
            print(f"extract, {what + ':':<17} {summarize(values)} ms")
        print(f"process CPU, with model:  {summarize(cpu)} ms")
        generator.scorer = scorer
        profiler = cProfile.Profile()
        profiler.enable()
        for r in answered:
            generator.extract(r)
        profiler.disable()
    print_profile(profiler, len(answered), "extractive answer")


def ingest_steps(corpus_dir: Path, target_chunks: int, model_dir: Path) -> None:
    """Where an ingest's time goes in the worker thread, step by step (no NATS, no HTTP)."""
    embedder = get_embedder(model_dir)
    settings = IngestSettings()
    walls: dict[str, float] = {}
    cpus: dict[str, float] = {}

    @contextlib.contextmanager
    def timed(name: str) -> Iterator[None]:
        c0, t0 = cpu_seconds(), time.perf_counter()
        yield
        walls[name] = walls.get(name, 0.0) + time.perf_counter() - t0
        cpus[name] = cpus.get(name, 0.0) + cpu_seconds() - c0

    with tempfile.TemporaryDirectory(prefix="rag-bench-profile-") as tmp:
        work = Path(tmp)
        if corpus_dir.is_dir():
            corpus = shared_corpus(corpus_dir, target_chunks, work / "corpus", embedder, settings, 0)
        else:
            corpus = synthetic_corpus(target_chunks, work / "corpus", embedder, settings, 0)
        embedder.embed_passages(corpus.documents[0].chunk_texts[:16])  # warm both sessions
        store = configured_store(settings, work / "qdrant")
        for i, doc in enumerate(corpus.documents):
            request = IngestRequested(
                request_id="profile",
                document_id=f"doc{i}",
                source=doc.source,
                object_name="-",
                content_hash="v1",
                size=len(doc.data),
            )
            version = index_version(request.content_hash, settings)
            with timed("store reads (handler)"):
                if store.collection_exists("default"):
                    store.document_state("default", request.document_id)
                    store.version_state("default", request.document_id, version)
            with timed("parse + chunk"):
                chunks = make_chunks(request, doc.data, embedder, settings)
            texts = embedding_texts(request, chunks, settings)
            with timed("embed (dense + BM25)"):
                dense, sparse = embedder.embed_passages(texts)
            with timed("payloads"):
                records = [
                    ChunkRecord(c.chunk_index, d, s, chunk_payload(request, c, settings).stored())
                    for c, d, s in zip(chunks, dense, sparse, strict=True)
                ]
            with timed("store write"):
                store.ensure_collection("default")
                store.replace_document("default", request.document_id, version, records)
        with timed("the embedder alone, again"):
            for doc in corpus.documents:
                embedder.embed_passages(doc.chunk_texts)
        store.close()
    n = corpus.chunks
    pipeline = sum(w for k, w in walls.items() if not k.startswith("the embedder"))
    print(f"{n} chunks of {len(corpus.documents)} documents; {embedder.workers} passage workers")
    print(f"{'step':28} {'wall ms/chunk':>14} {'share':>6} {'CPU ms/chunk':>13}")
    for name, wall in walls.items():
        share = "" if name.startswith("the embedder") else f"{100 * wall / pipeline:5.1f}%"
        print(f"{name:28} {wall * 1000 / n:14.2f} {share:>6} {cpus[name] * 1000 / n:13.2f}")


async def _drop(query: object, delta: object) -> None:
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["hops", "retrieval", "generation", "ingest"])
    parser.add_argument("--count", type=int, default=200, help="greetings (hops) or questions (retrieval)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="retrieval: folder (else synthetic)")
    parser.add_argument("--target-chunks", type=int, default=500, help="retrieval: chunks to index")
    parser.add_argument("--model-dir", type=Path, default=ROOT / "data" / "models" / "all-MiniLM-L6-v2-int8")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    model_dir = args.model_dir.resolve()
    if args.what == "hops":
        asyncio.run(hops(args.count, model_dir))
    elif args.what == "ingest":
        ingest_steps(args.corpus, args.target_chunks, model_dir)
    elif args.what == "retrieval":
        retrieval(args.corpus, args.target_chunks, min(args.count, 100), model_dir)
    else:
        generation(args.corpus, args.target_chunks, min(args.count, 100), model_dir)


if __name__ == "__main__":
    main()
