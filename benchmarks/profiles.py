"""Profiles that explain the benchmark figures: ``python -m benchmarks.profiles hops|retrieval``.

- ``questions``: full questions through the system as a user asks them (HTTP → gateway → router →
  retriever → generator → evaluator → gateway → HTTP), one at a time, on the benchmark's corpus
  slice: per question a timeline of when each stage received its message and published the next
  (``benchmarks.timeline``), so each hop's delivery time and each stage's own time (its work and
  the message handling around it) show, beside the nats-py floor of a hop on the same server.
- ``hops``: greetings over JetStream (the router answers them: requested → router → drafted →
  evaluator, then the final answer on core NATS; no retrieval, no model). What is left is the cost
  of moving a question between stages: the pipeline-overhead figure.
- ``retrieval``: the benchmark's corpus slice indexed straight into a local Qdrant folder (no NATS),
  then ``Retriever.retrieve`` on each question: how its time splits between the query embedding,
  the hybrid search and the rest.
- ``generation``: the same index, then the extractive answer of each retrieved question: the
  sentence scores the retriever sends (vectors stored at ingest) and their bytes, what the model
  would embed without them, and what each way costs.
- ``sentences``: what the sentence vectors cost at ingest (chunks embedded with and without them)
  and in the retriever (retrievals with and without the sentence scores), each pair in turn.
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
import os
import pstats
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import httpx

from benchmarks.corpus import shared_corpus, synthetic_corpus
from benchmarks.hop_floor import measure_floor
from benchmarks.overhead import GREETING, cpu_seconds, nats_client
from benchmarks.system import QUERY_SERVICES, private_nats, stack_options
from benchmarks.timeline import Timelines, summary
from rag_common.store.embedding import Embedder, get_embedder
from rag_common.store.factory import configured_store
from rag_common.store.vectors import ChunkRecord
from rag_common.text.quotable import candidate_sentences
from rag_common.transport import consuming
from rag_common.transport.broker import RagBroker
from rag_common.transport.telemetry import setup_telemetry
from rag_common.wire.messages import IngestRequested, Query, QueryRouted, Route
from rag_devrun.stack import Stack
from rag_gateway.answers import AnswerHub
from rag_generator.drafting import Generator
from rag_generator.scoring import embedding_scorer
from rag_generator.settings import GeneratorSettings
from rag_ingest.pipeline import chunk_payload, embedding_texts, index_document, index_version, make_chunks
from rag_ingest.sentences import embed_chunks
from rag_ingest.settings import IngestSettings
from rag_retriever.search import Retriever
from rag_retriever.settings import RetrieverSettings
from rag_scorecard.stats import summarize

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
def hop_hooks(timelines: Timelines) -> Iterator[None]:
    """Record when the transport publishes and receives each query-path message (``Timelines``).

    Wraps the places a question passes: ``RagBroker.publish`` (the gateway's question, each
    stage's next message, the final answer), ``process_message`` (a stage's handler body, after
    FastStream's subscriber and middlewares) and ``AnswerHub.deliver`` (the gateway hands an answer
    to the waiting request, after its subscriber's own work). Patches at class and module level:
    the handlers look them up on every message.
    """
    publish = RagBroker.publish
    process = consuming.process_message
    deliver = AnswerHub.deliver

    async def timed_publish(self: RagBroker, message: Any, subject: str, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await publish(self, message, subject, *args, **kwargs)
        finally:
            timelines.published(subject, kwargs.get("headers"), started, time.perf_counter())

    async def timed_process(msg: Any, *args: Any, **kwargs: Any) -> None:
        timelines.received(msg.raw_message.subject, msg.raw_message.headers, time.perf_counter())
        await process(msg, *args, **kwargs)

    def timed_deliver(self: AnswerHub, subject: str, body: bytes) -> None:
        timelines.received(subject, None, time.perf_counter())
        deliver(self, subject, body)

    with (
        mock.patch.object(RagBroker, "publish", timed_publish),
        mock.patch.object(consuming, "process_message", timed_process),
        mock.patch.object(AnswerHub, "deliver", timed_deliver),
    ):
        yield


async def questions(
    corpus_dir: Path, target_chunks: int, count: int, model_dir: Path, save_profile: Path | None = None
) -> None:
    """Full questions through HTTP one at a time, each cut into hops and stages (``benchmarks.timeline``)."""
    with indexed_corpus(corpus_dir, target_chunks, 100, model_dir) as (_, retriever, queries):
        data_dir = retriever.settings.resolved_qdrant_path.parent
        asked = [q.query.question for q in queries]
        batch = [asked[i % len(asked)] for i in range(count)]
        timelines = Timelines()
        with hop_hooks(timelines):
            async with (
                private_nats(data_dir / "nats") as server,
                Stack(stack_options(data_dir, server.url, model_dir, services=QUERY_SERVICES)) as stack,
                httpx.AsyncClient(base_url=stack.base_url, timeout=30) as http,
            ):

                async def ask(question: str) -> None:
                    sent = time.perf_counter()
                    response = await http.post("/v1/query", json={"question": question})
                    done = time.perf_counter()
                    response.raise_for_status()
                    body = response.json()
                    timelines.asked(body["request_id"], sent, done, body["timings_ms"])

                for question in asked[:5]:  # warm-up, not recorded
                    await ask(question)
                timelines.by_request.clear()
                cpu = cpu_seconds()
                for question in batch:
                    await ask(question)
                cpu_ms = (cpu_seconds() - cpu) * 1000 / len(batch)
                floor = await measure_floor(server.url, count=200, max_seconds=10)
                timelines.recording = False
                profiler = cProfile.Profile()
                profiler.enable()
                for question in batch:
                    await ask(question)
                profiler.disable()
    recorded = timelines.complete()
    print(f"{len(recorded)} questions through HTTP at concurrency 1 (client in this process; "
          f"process CPU {cpu_ms:.2f} ms a question, the client's share included)")  # fmt: skip
    print_timeline(summary(recorded), floor)
    print_profile(profiler, len(batch), "question")
    if save_profile is not None:
        profiler.dump_stats(save_profile)
        print(f"cProfile data in {save_profile} (python -m pstats {save_profile})")


def print_timeline(pieces: dict[str, dict[str, float | int]], floor: dict[str, Any]) -> None:
    """The pieces in the question's order (p50 and mean), then the stages' work and the publish calls."""

    def row(name: str, values: dict[str, float | int]) -> str:
        return f"  {name:<34} {values.get('p50', 0):8.3f} {values.get('mean', 0):8.3f} {values.get('p95', 0):8.3f}"

    print(f"\n  {'piece of the question (ms)':<34} {'p50':>8} {'mean':>8} {'p95':>8}")
    ordered = [n for n in pieces if not n.startswith(("publish ", "whole")) and "timings_ms" not in n]
    for name in ordered:
        print(row(name, pieces[name]))
    total = sum(float(pieces[n].get("mean", 0)) for n in ordered)
    print(row("whole (client)", pieces["whole (client)"]) + f"   (pieces' means add up to {total:.3f})")
    print(row("whole less the stages' work", pieces["whole less the stages' work"]))
    hops = [n for n in ordered if n.startswith("hop ")]
    print(f"  hops together (means):             {sum(float(pieces[n].get('mean', 0)) for n in hops):8.3f}")
    print("\n  the stages' work, as they report it in timings_ms, and each publish call:")
    for name in [n for n in pieces if "timings_ms" in n or n.startswith("publish ")]:
        print(row(name, pieces[name]))
    js_hop, core = floor.get("js_hop", {}), floor.get("core_request", {})
    print(f"\n  nats-py floor on this server: JetStream hop p50 {js_hop.get('p50', 0):.3f} ms (publish, PubAck, "
          f"pull, ack), core request/reply p50 {core.get('p50', 0):.3f} ms")  # fmt: skip


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

    Per question: the passages' size in word pieces, the quotable units found, the sentence scores
    the retriever sends (stored vectors) and the bytes they add to the retrieved message, how many
    answers still need the model; then ``Generator.extract`` timed with the stored scores (the
    default), with the model (``stored_sentence_scores`` off) and on words alone.
    """
    with indexed_corpus(corpus_dir, target_chunks, count, model_dir) as (embedder, retriever, queries):
        stored = Generator(GeneratorSettings(model_dir=model_dir), None, setup_telemetry("profile"), on_delta=_drop)
        modelled = Generator(
            GeneratorSettings(model_dir=model_dir, stored_sentence_scores=False),
            None,
            setup_telemetry("profile"),
            on_delta=_drop,
        )
        words = Generator(
            GeneratorSettings(model_dir=model_dir, sentence_scoring=False), None, setup_telemetry("p"), _drop
        )
        scorer = embedding_scorer(embedder, cache_size=0)  # each answer is drafted several times below
        batches: list[list[str]] = []

        def counting(question: str, sentences: Sequence[str]) -> Sequence[float]:
            batches.append([question, *sentences])
            return scorer(question, sentences)

        retrieved = [retriever.retrieve(q) for q in queries]
        answered = [r for r in retrieved if not r.retrieval.refused and r.retrieval.passages]
        pieces, units, scored, scored_pieces, extra_bytes, needing_model = [], [], [], [], [], 0
        for r in answered:
            passages = r.retrieval.passages
            pieces.append(sum(embedder.count_tokens(p.text) for p in passages))
            units.append(len(candidate_sentences(passages)))
            scored.append(sum(len(s) for s in r.retrieval.sentence_scores.values()))
            bare = r.model_copy(update={"retrieval": r.retrieval.model_copy(update={"sentence_scores": {}})})
            extra_bytes.append(len(r.model_dump_json()) - len(bare.model_dump_json()))
            stored.scorer, batches = counting, []
            stored.extract(r)
            needing_model += bool(batches)
            modelled.scorer, batches = counting, []
            modelled.extract(r)
            scored_pieces.append(sum(embedder.count_tokens(t) for b in batches for t in b))
        print(f"{len(answered)} of {len(retrieved)} questions answered (the rest refused by the retriever)")
        print(f"passages per answer:      {summarize([len(r.retrieval.passages) for r in answered])}")
        print(f"word pieces of passages:  {summarize(pieces)}")
        print(f"quotable units:           {summarize(units)}")
        print(f"units with stored scores: {summarize(scored)} (sent by the retriever)")
        print(f"their bytes on the wire:  {summarize(extra_bytes)} (JSON, per retrieved message)")
        print(f"answers needing the model with stored scores: {needing_model} of {len(answered)}")
        print(f"word pieces the model embeds without them: {summarize(scored_pieces)} (question included)")
        same = sum(stored.extract(r) == modelled.extract(r) for r in answered)
        print(f"answers identical with stored scores and with the model: {same} of {len(answered)}")
        timings: dict[str, list[float]] = {"stored scores": [], "with the model": [], "words only": []}
        cpu: dict[str, list[float]] = {"stored scores": [], "with the model": []}
        stored.scorer = modelled.scorer = scorer
        for r in answered:
            for what, generator in (("stored scores", stored), ("with the model", modelled), ("words only", words)):
                c0, t0 = cpu_seconds(), time.perf_counter()
                generator.extract(r)
                timings[what].append((time.perf_counter() - t0) * 1000)
                if what in cpu:
                    cpu[what].append((cpu_seconds() - c0) * 1000)
        for what, values in timings.items():
            print(f"extract, {what + ':':<17} {summarize(values)} ms")
        for what, values in cpu.items():
            print(f"process CPU, {what + ':':<14} {summarize(values)} ms")
        profiler = cProfile.Profile()
        profiler.enable()
        for r in answered:
            stored.extract(r)
        profiler.disable()
    print_profile(profiler, len(answered), "extractive answer (stored scores)")


def sentences(corpus_dir: Path, target_chunks: int, count: int, model_dir: Path) -> None:
    """What the sentence vectors cost, each side paired in one process (process CPU, every thread).

    Ingest: each document's chunks embedded as ingest did before (``embed_passages``) and as it does
    now (``embed_chunks``: the quotable units found, pooled from the same forward pass), the two in
    turn per document, their order alternating. Retriever: ``Retriever.retrieve`` per question with
    and without the sentence scores (query cache off), in turn, order alternating.
    """
    embedder = get_embedder(model_dir)
    settings = IngestSettings()
    with tempfile.TemporaryDirectory(prefix="rag-bench-profile-") as tmp:
        corpus = shared_corpus(corpus_dir, target_chunks, Path(tmp) / "corpus", embedder, settings, count)
        cpu = {"embed_passages": 0.0, "embed_chunks": 0.0}
        wall = dict(cpu)
        chunks_total = 0
        for i, doc in enumerate(corpus.documents):
            request = IngestRequested(
                request_id="profile", document_id=f"doc{i}", source=doc.source, object_name="-", content_hash="v1",
                size=len(doc.data),
            )  # fmt: skip
            chunks = make_chunks(request, doc.data, embedder, settings)
            texts = embedding_texts(request, chunks, settings)
            payloads = [chunk_payload(request, c, settings) for c in chunks]
            chunks_total += len(chunks)
            order = ["embed_passages", "embed_chunks"]
            for what in order if i % 2 == 0 else order[::-1]:
                c0, t0 = cpu_seconds(), time.perf_counter()
                if what == "embed_passages":
                    embedder.embed_passages(texts)
                else:
                    embed_chunks(embedder, texts, chunks, payloads, sentence_vectors=True)
                cpu[what] += cpu_seconds() - c0
                wall[what] += time.perf_counter() - t0
        for what in cpu:
            print(
                f"ingest {what + ':':<16} {chunks_total / wall[what]:.2f} chunks/s wall, "
                f"{cpu[what] * 1000 / chunks_total:.1f} ms CPU a chunk"
            )
        print(f"ingest embed_chunks / embed_passages: CPU {cpu['embed_chunks'] / cpu['embed_passages']:.3f}, "
              f"wall {wall['embed_chunks'] / wall['embed_passages']:.3f}")  # fmt: skip
    with indexed_corpus(corpus_dir, target_chunks, count, model_dir) as (embedder, retriever, queries):
        on = Retriever(retriever.settings.model_copy(update={"query_cache_size": 0}), embedder, retriever.store)
        off = Retriever(retriever.settings.model_copy(update={"query_cache_size": 0}), embedder, retriever.store)
        off.steps = [step for step in off.steps if step.name != "sentence scores"]
        for query in queries[:3]:
            on.retrieve(query), off.retrieve(query)
        times: dict[str, list[float]] = {"with sentence scores": [], "without": []}
        cpus: dict[str, list[float]] = {"with sentence scores": [], "without": []}
        for i, query in enumerate(queries * 3):
            pair = [("with sentence scores", on), ("without", off)]
            for what, which in pair if i % 2 == 0 else pair[::-1]:
                c0, t0 = cpu_seconds(), time.perf_counter()
                which.retrieve(query)
                times[what].append((time.perf_counter() - t0) * 1000)
                cpus[what].append((cpu_seconds() - c0) * 1000)
        for what in times:
            print(f"retrieve, {what + ':':<22} wall {summarize(times[what])} ms; CPU {summarize(cpus[what])} ms")


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
    parser.add_argument("what", choices=["questions", "hops", "retrieval", "generation", "sentences", "ingest"])
    parser.add_argument("--count", type=int, default=200, help="greetings (hops) or questions (the others)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="retrieval: folder (else synthetic)")
    parser.add_argument("--target-chunks", type=int, default=500, help="retrieval: chunks to index")
    parser.add_argument("--save-profile", type=Path, help="questions: write the cProfile data here")
    parser.add_argument("--model-dir", type=Path, default=ROOT / "data" / "models" / "all-MiniLM-L6-v2-int8")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    model_dir = args.model_dir.resolve()
    if args.what == "questions":
        # Each question is asked several times: caches would skip the model on repeats (as in make bench).
        os.environ.setdefault("RAG_RETRIEVER_QUERY_CACHE_SIZE", "0")
        os.environ.setdefault("RAG_GENERATOR_SENTENCE_CACHE_SIZE", "0")
        asyncio.run(questions(args.corpus, args.target_chunks, args.count, model_dir, args.save_profile))
    elif args.what == "hops":
        asyncio.run(hops(args.count, model_dir))
    elif args.what == "ingest":
        ingest_steps(args.corpus, args.target_chunks, model_dir)
    elif args.what == "retrieval":
        retrieval(args.corpus, args.target_chunks, min(args.count, 100), model_dir)
    elif args.what == "sentences":
        sentences(args.corpus, args.target_chunks, min(args.count, 100), model_dir)
    else:
        generation(args.corpus, args.target_chunks, min(args.count, 100), model_dir)


if __name__ == "__main__":
    main()
