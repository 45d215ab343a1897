"""The measurements on one loaded system: ingest, query latency, the pipeline's overhead, throughput.

``benchmarks.__main__`` builds the corpus, starts a private nats-server and calls these in order.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

from benchmarks import hop_floor, ingest, overhead, query
from benchmarks.bounds import Bounds
from benchmarks.corpus import BenchCorpus
from benchmarks.cpu import cores_used, snapshot
from benchmarks.hop_floor import hop_floors
from benchmarks.report import Recorder
from benchmarks.system import QUERY_SERVICES, close_store, private_nats, qdrant_path, stack_options
from rag_common.store.embedding import Embedder
from rag_devrun.processes import Cluster, free_port
from rag_devrun.stack import Stack
from rag_scorecard.stats import summarize

T = TypeVar("T")


async def measured(work: Awaitable[T]) -> tuple[T, dict[str, float] | None]:
    """The result of ``work`` and how busy the cores were (by us, by others) while it ran."""
    before = snapshot()
    result = await work
    return result, cores_used(before, snapshot())


class Bench:
    def __init__(self, args: argparse.Namespace, bounds: Bounds, recorder: Recorder, work: Path) -> None:
        self.args, self.bounds, self.rec, self.work = args, bounds, recorder, work
        self.model_dir: Path = args.model_dir.resolve()
        self.system_dir = work / "system"  # the loaded corpus the query benchmarks ask about

    # --- 8. ingest ---------------------------------------------------------------------------------

    async def ingest_runs(self, corpus: BenchCorpus, embedder: Embedder, system_nats: str) -> None:
        timeout = 120 + corpus.chunks * 1.0
        for run in range(1, self.args.runs + 1):
            self.rec.run = run
            # The first run loads the corpus the query benchmarks use; later runs start from scratch.
            keep = run == 1
            data_dir = self.system_dir if keep else self.work / f"ingest-{run}"
            async with contextlib.AsyncExitStack() as exits:
                url = system_nats if keep else (await exits.enter_async_context(private_nats(data_dir / "nats"))).url
                embed = asyncio.to_thread(ingest.embed_only, embedder, corpus)
                end_to_end = ingest.ingest_through_http(corpus, data_dir, url, self.model_dir, timeout)
                if run % 2 == 0:  # alternate the order, so drift in machine load hits both alike
                    (embed_s, embed_cpu), embed_cores = await measured(embed)
                    result, ingest_cores = await measured(end_to_end)
                else:
                    result, ingest_cores = await measured(end_to_end)
                    (embed_s, embed_cpu), embed_cores = await measured(embed)
            if not keep:
                close_store(data_dir)
                shutil.rmtree(data_dir, ignore_errors=True)
            if result.failed or result.chunks != corpus.chunks:
                print(f"  ! {len(result.failed)} documents failed; {result.chunks} chunks indexed of {corpus.chunks}")
            embed_rate = corpus.chunks / embed_s
            self.rec.record(
                "ingest.chunks_per_s",
                result.chunks_per_s,
                "chunks/s",
                "upload through HTTP → every document indexed",
                result.to_json(),
                cores=ingest_cores,
            )
            self.rec.record(
                "ingest.embed_only_chunks_per_s",
                embed_rate,
                "chunks/s",
                "Embedder.embed_passages (dense+sparse) alone on the same chunk texts, one call per document",
                {
                    "seconds": round(embed_s, 3),
                    "chunks": corpus.chunks,
                    "cpu_ms_per_chunk": round(embed_cpu * 1000 / corpus.chunks, 2) if embed_cpu else None,
                },
                cores=embed_cores,
            )
            self.rec.record(
                "ingest.ratio",
                result.chunks_per_s / embed_rate,
                "ratio",
                "end to end / embedding alone",
                cores=ingest_cores,
            )
            if embed_cpu and result.cpu_seconds:
                # CPU per chunk, model alone / end to end: the pipeline's own cost, which a loaded
                # machine hides from the wall-clock ratio (both get whatever share of the cores).
                self.rec.record(
                    "ingest.cpu_ratio",
                    (embed_cpu / corpus.chunks) / (result.cpu_seconds / result.chunks),
                    "ratio",
                    "process CPU per chunk: embedding alone / end to end",
                    cores=ingest_cores,
                )

    async def load_once(self, corpus: BenchCorpus, system_nats: str) -> None:
        """Without the ingest benchmark the query benchmarks still need the corpus loaded (not measured)."""
        result = await ingest.ingest_through_http(
            corpus, self.system_dir, system_nats, self.model_dir, 120 + corpus.chunks * 1.0
        )
        print(f"  loaded {result.documents} documents, {result.chunks} chunks in {result.seconds:.1f}s (not measured)")

    # --- 9-11. queries -----------------------------------------------------------------------------

    async def query_runs(self, corpus: BenchCorpus, system_nats: str) -> None:
        groups = self.args.groups
        questions = corpus.questions
        for run in range(1, self.args.runs + 1):
            self.rec.run = run
            replicas_order = (1, 2) if run % 2 else (2, 1)
            for replicas in replicas_order:
                if replicas == 2 and "throughput" not in groups:
                    continue
                options = stack_options(
                    self.system_dir,
                    system_nats,
                    self.model_dir,
                    services=QUERY_SERVICES,
                    replicas={"retriever": replicas},
                )
                async with Stack(options) as stack:
                    if replicas == 1:
                        await self.latency(stack, questions, groups)
                        if "overhead" in groups:
                            await self.overhead(stack, questions)
                    if "throughput" in groups:
                        await self.throughput(stack.base_url, questions, f"retriever_x{replicas}")

    async def processes_runs(self, corpus: BenchCorpus, system_nats: str) -> None:
        """Throughput with one process per service (``make run-processes``) on the same index."""
        close_store(self.system_dir)  # the store process owns the folder from now on
        env = {"RAG_MODEL_DIR": str(self.model_dir), "QDRANT_PATH": str(qdrant_path(self.system_dir))}
        for run in range(1, self.args.runs + 1):
            self.rec.run = run
            cluster = Cluster(self.system_dir, system_nats, free_port(), env=env)
            try:
                cluster.start_all()
                await cluster.wait_ready(180)
                await self.throughput(cluster.base_url, corpus.questions, "processes")
            finally:
                await asyncio.to_thread(cluster.stop_all)

    def pipeline(self, stack: Stack) -> overhead.InProcessPipeline:
        """The stage functions in-process, over the running system's embedder and store."""
        return overhead.InProcessPipeline(stack.nats_url, self.system_dir, self.model_dir, qdrant_path(self.system_dir))

    async def latency(self, stack: Stack, questions: list[str], groups: list[str]) -> None:
        if "latency" not in groups:
            return
        for concurrency, (count, seconds) in ((1, self.bounds.latency_c1), (8, self.bounds.latency_c8)):
            self.rec.mark()
            result = await query.measure(stack.base_url, questions, concurrency, count, seconds, self.bounds.warmup)
            detail = query.latency_detail(result)
            e2e = detail["e2e_ms"]
            prefix = f"query.c{concurrency}"
            what = f"POST /v1/query at concurrency {concurrency}, client-measured"
            self.rec.record(f"{prefix}.e2e_p50_ms", e2e["p50"], "ms", what + " (p50)", detail)
            self.rec.record(f"{prefix}.e2e_p95_ms", e2e["p95"], "ms", what + " (p95)")
            for stage in (*query.STAGES, "hops"):
                stats = detail["stages_ms"][stage]
                if stats["n"]:
                    what = f"{stage} at concurrency {concurrency}, from the answers' timings_ms"
                    self.rec.record(f"{prefix}.{stage}_p50_ms", stats["p50"], "ms", what + " (p50)")
                    self.rec.record(f"{prefix}.{stage}_p95_ms", stats["p95"], "ms", what + " (p95)")
            if concurrency == 1:
                await self.retrieval_alone(stack, questions, e2e["p50"])

    async def retrieval_alone(self, stack: Stack, questions: list[str], answer_p50: float) -> None:
        """The answer-time target's yardstick, right after the answers at concurrency 1: the retrieval alone."""
        pipeline = self.pipeline(stack)
        repeats, seconds = self.bounds.retrieval_alone
        await asyncio.to_thread(pipeline.retrieval_ms, questions[: self.bounds.warmup], 1, seconds)
        self.rec.mark()
        retrieval, embedding = await asyncio.to_thread(pipeline.retrieval_ms, questions, repeats, seconds)
        stats = summarize(retrieval)
        self.rec.record(
            "query.retrieval_inprocess_p50_ms",
            stats["p50"],
            "ms",
            "Retriever.retrieve in-process, no answer (query embedding, hybrid search, context), p50",
            {"retrieval_ms": stats, "embed_query_ms": summarize(embedding)},
        )
        self.rec.record(
            "query.c1.answer_over_retrieval",
            answer_p50 / stats["p50"],
            "ratio",
            "answer p50 through HTTP at concurrency 1 / in-process retrieval alone p50, same run",
        )

    async def overhead(self, stack: Stack, questions: list[str]) -> None:
        pipeline = self.pipeline(stack)
        self.rec.mark()
        run = await overhead.measure_overhead(
            pipeline,
            stack.base_url,
            stack.nats_url,
            questions,
            repeats=self.bounds.overhead_repeats,
            max_seconds=self.bounds.overhead_seconds,
            warmup=min(3, len(questions)),
        )
        figures = overhead.headline(run)
        self.rec.record(
            "overhead.nats_minus_inprocess_p50_ms",
            figures["paired_p50"],
            "ms",
            "per question: (JetStream publish → final answer) − (stage functions in-process), median of pairs",
            run.to_json(),
        )
        self.rec.record("overhead.inprocess_p50_ms", figures["inprocess_p50"], "ms", "stage functions in-process")
        generator = run.inprocess_stage_ms.get("generator", {}).get("p50")
        if isinstance(generator, (int, float)):
            self.rec.record(
                "overhead.generator_p50_ms",
                float(generator),
                "ms",
                "the generator's draft in-process (the extractive answer, one thread: its CPU), per question",
            )
        self.rec.record("overhead.nats_p50_ms", figures["nats_p50"], "ms", "QueryRequested on JetStream → final")
        self.rec.record("overhead.http_p50_ms", figures["http_p50"], "ms", "POST /v1/query, same questions")
        self.rec.record(
            "overhead.http_minus_inprocess_p50_ms",
            figures["http_paired_p50"],
            "ms",
            "per question: through the gateway − in-process, median of pairs",
        )
        self.rec.record(
            "overhead.work_nats_minus_inprocess_p50_ms",
            figures["work_paired_p50"],
            "ms",
            "per question: the four stages' own work in the services (the answer's timings_ms) − the same "
            "calls in-process, median of pairs: the part of the overhead that is slower work, not moving",
        )
        self.rec.record(
            "overhead.moving_nats_minus_inprocess_p50_ms",
            figures["moving_paired_p50"],
            "ms",
            "per question: the NATS overhead less the stages' slower work, median: moving the question "
            "(deliveries, acks, validation and encoding, trace context, publish calls)",
        )
        self.rec.record(
            "overhead.greeting_nats_minus_inprocess_p50_ms",
            figures["greeting_paired_p50"],
            "ms",
            "a greeting (router → evaluator: two JetStream hops, no retrieval): NATS − in-process, median of pairs",
        )
        floor = await hop_floor.measure_floor(stack.nats_url, count=300, max_seconds=10)
        self.rec.record(
            "overhead.floor_js_hop_p50_ms",
            floor["js_hop"]["p50"],
            "ms",
            "nats-py alone: JetStream publish (with PubAck) → pull consumer has it and acked (benchmarks.hop_floor)",
            floor,
        )
        self.rec.record(
            "overhead.floor_question_ms",
            hop_floors(floor),
            "ms",
            "the least a question's NATS path can cost: 5 bare JetStream hops + one core NATS message (half a request)",
        )
        self.rec.record(
            "overhead.cpu_nats_minus_inprocess_p50_ms",
            figures["cpu_paired_p50"],
            "ms",
            "process CPU per question (all threads, nats-server excluded): NATS − in-process, median of pairs",
        )

    async def throughput(self, base_url: str, questions: list[str], layout: str) -> None:
        what = {"retriever_x1": "one process, one retriever", "retriever_x2": "one process, two retriever replicas"}
        for concurrency, (count, seconds) in ((8, self.bounds.throughput_c8), (32, self.bounds.throughput_c32)):
            self.rec.mark()
            result = await query.measure(base_url, questions, concurrency, count, seconds, self.bounds.warmup)
            detail = query.latency_detail(result)
            self.rec.record(
                f"throughput.{layout}.c{concurrency}_qps",
                result.per_second,
                "q/s",
                f"answered questions per second at concurrency {concurrency}, "
                + what.get(layout, "one process per service (store, router, generator, evaluator, gateway)"),
                detail,
            )
