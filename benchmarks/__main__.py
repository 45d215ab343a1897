"""``python -m benchmarks`` (``make bench``): ingest, latency, overhead, throughput and scale figures.

Writes ``reports/bench.json``. Each figure is measured ``--runs`` times (default 3) and reported as
the median, with every run kept. ``--quick`` is a short smoke run (one run, small bounds).
"""

from __future__ import annotations

import os

# Set before any model library is imported (``make bench`` exports them too).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# The latency loops ask each question several times: with the query-embedding cache or the
# generator's sentence-vector cache on, every repeat would skip the model and flatter the figures.
os.environ.setdefault("RAG_RETRIEVER_QUERY_CACHE_SIZE", "0")
os.environ.setdefault("RAG_GENERATOR_SENTENCE_CACHE_SIZE", "0")
# Likewise the answer cache would answer every repeat from memory; the cache section turns it on.
os.environ.setdefault("RAG_ANSWER_CACHE", "false")

import argparse
import asyncio
import contextlib
import logging
import shutil
import tempfile
import time
from collections.abc import Awaitable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from benchmarks import cache, hop_floor, ingest, listing, overhead, query, scale
from benchmarks.corpus import BenchCorpus, shared_corpus, synthetic_corpus
from benchmarks.cpu import cores_used, snapshot
from benchmarks.hop_floor import hop_floors
from benchmarks.report import (
    WHOLE,
    Recorder,
    git_commit,
    load_average,
    machine,
    print_summary,
    print_tables,
    write_report,
)
from benchmarks.system import QUERY_SERVICES, close_store, private_nats, qdrant_path, stack_options
from rag_common.config.settings import StoreSettings
from rag_common.store.embedding import Embedder, get_embedder
from rag_devrun.processes import Cluster, free_port
from rag_devrun.stack import Stack
from rag_ingest.settings import IngestSettings
from rag_scorecard.stats import summarize

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "eval" / "anthropic-docs" / "corpus"
DEFAULT_MODEL_DIR = ROOT / "data" / "models" / "all-MiniLM-L6-v2-int8"
GROUPS = ("ingest", "latency", "overhead", "throughput", "scale", "listing", "cache")
WHOLE_GROUPS = ("latency", "overhead", "throughput")  # measured again on the whole shared corpus
T = TypeVar("T")


@dataclass(frozen=True)
class Bounds:
    """How much each request loop may do: a count and a time limit, whichever comes first."""

    target_chunks: int
    questions: int
    latency_c1: tuple[int, float]
    latency_c8: tuple[int, float]
    retrieval_alone: tuple[int, float]  # repeats of the question list, seconds
    overhead_repeats: int
    overhead_seconds: float
    throughput_c8: tuple[int, float]
    throughput_c32: tuple[int, float]
    warmup: int
    scale_small: int
    scale_large: int
    scale_large_local: int
    scale_count: int
    scale_seconds: float
    cache_questions: int  # asked twice per run (a full answer, then the cache's)
    cache_seconds: float  # each pass of them


FULL = Bounds(
    target_chunks=500,
    questions=30,
    latency_c1=(90, 15.0),
    latency_c8=(160, 10.0),
    retrieval_alone=(3, 10.0),
    overhead_repeats=1,
    overhead_seconds=20.0,
    throughput_c8=(240, 6.0),
    throughput_c32=(320, 6.0),
    warmup=5,
    scale_small=scale.SMALL,
    scale_large=scale.LARGE,
    scale_large_local=scale.LOCAL_LARGE,
    scale_count=40,
    scale_seconds=20.0,
    cache_questions=80,
    cache_seconds=60.0,
)
QUICK = Bounds(
    target_chunks=100,
    questions=8,
    latency_c1=(20, 5.0),
    latency_c8=(40, 5.0),
    retrieval_alone=(2, 3.0),
    overhead_repeats=1,
    overhead_seconds=10.0,
    throughput_c8=(60, 4.0),
    throughput_c32=(100, 4.0),
    warmup=2,
    scale_small=300,
    scale_large=1200,
    scale_large_local=1200,
    scale_count=10,
    scale_seconds=5.0,
    cache_questions=20,
    cache_seconds=20.0,
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--runs", type=int, default=None, help="runs per figure (default 3; 1 with --quick)")
    parser.add_argument("--quick", action="store_true", help="short smoke run: small corpus, one run, small bounds")
    parser.add_argument(
        "--corpus",
        default=str(DEFAULT_CORPUS),
        help="folder of documents (default: the shared anthropic-docs corpus); 'synthetic' for a generated one",
    )
    parser.add_argument("--target-chunks", type=int, default=None, help="chunks to ingest (default 500; 100 quick)")
    parser.add_argument("--only", default=",".join(GROUPS), help=f"comma-separated subset of {','.join(GROUPS)}")
    parser.add_argument(
        "--no-whole",
        dest="whole",
        action="store_false",
        help="skip the second pass of latency, overhead and throughput on the whole shared corpus "
        "(figures named whole.*; skipped anyway with --quick or a synthetic corpus)",
    )
    parser.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL_DIR)
    parser.add_argument("--output", type=Path, default=ROOT / "reports" / "bench.json")
    parser.add_argument("-v", "--verbose", action="store_true", help="the services' own log lines too")
    parser.add_argument(
        "--table",
        type=Path,
        nargs="?",
        const=ROOT / "reports" / "bench.json",
        default=None,
        metavar="REPORT",
        help="measure nothing: print a written report (default reports/bench.json) as the Markdown tables "
        "docs/BENCHMARKS.md shows",
    )
    args = parser.parse_args(argv)
    args.runs = args.runs or (1 if args.quick else 3)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    args.groups = [g.strip() for g in args.only.split(",") if g.strip()]
    unknown = set(args.groups) - set(GROUPS)
    if unknown:
        parser.error(f"--only: unknown {', '.join(sorted(unknown))} (choose from {', '.join(GROUPS)})")
    args.whole = args.whole and not args.quick and bool(set(args.groups) & set(WHOLE_GROUPS))
    return args


def build_corpus(args: argparse.Namespace, bounds: Bounds, embedder: Embedder, folder: Path) -> BenchCorpus:
    settings = IngestSettings()  # the ingest service's chunking settings (env included), as the stack uses
    target = args.target_chunks or bounds.target_chunks
    root = Path(args.corpus)
    if args.corpus != "synthetic" and root.is_dir():
        corpus = shared_corpus(root, target, folder, embedder, settings, bounds.questions)
        if corpus.chunks >= target and len(corpus.questions) >= 4:
            return corpus
        print(f"  {root} gives {corpus.chunks} chunks and {len(corpus.questions)} questions: using a synthetic corpus")
    elif args.corpus != "synthetic":
        print(f"  no corpus at {root}: using a synthetic corpus")
    return synthetic_corpus(target, folder, embedder, settings, bounds.questions)


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


async def main(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    bounds = QUICK if args.quick else FULL
    recorder = Recorder()
    recorder.runs = args.runs
    meta: dict[str, Any] = {
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine(),
        "git_commit": git_commit(ROOT),
        "args": {"runs": args.runs, "quick": args.quick, "corpus": args.corpus, "only": args.groups},
        "bounds": asdict(bounds),
        "load_average": {"start": load_average()},
    }
    print(f"benchmarks: {meta['machine']['cores']} cores, Python {meta['machine']['python']}, {meta['git_commit']}")
    if not (args.model_dir / "model.onnx").is_file():
        raise SystemExit(f"no embedding model at {args.model_dir}: run `make model` first")
    embedder = await asyncio.to_thread(get_embedder, args.model_dir.resolve())
    try:
        await measure_all(args, bounds, recorder, embedder, meta)
    except BaseException as exc:  # keep what was measured, and say why the rest is missing
        meta["error"] = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        meta["load_average"]["end"] = load_average()
        meta["seconds_total"] = round(time.perf_counter() - started, 1)
        report = write_report(args.output, recorder, meta)
        print_summary(recorder)
        print(f"\nwrote {args.output} in {meta['seconds_total']:.0f}s")
    return report


async def measure_all(
    args: argparse.Namespace, bounds: Bounds, recorder: Recorder, embedder: Embedder, meta: dict[str, Any]
) -> None:
    if "scale" in args.groups:
        print("12. retrieval cost against corpus size (in-process, no NATS)")
        phase = time.perf_counter()
        await scale_runs(args, bounds, recorder, embedder)
        meta["seconds_scale"] = round(time.perf_counter() - phase, 1)
    if "listing" in args.groups:
        print("13. listing cost against documents in other collections (gateway + nats-server)")
        phase = time.perf_counter()
        await listing_runs(args, bounds, recorder)
        meta["seconds_listing"] = round(time.perf_counter() - phase, 1)
    if "cache" in args.groups:
        print("14. answer cache: threshold on samples/orbitly pairs; a hit through the gateway vs a full answer")
        phase = time.perf_counter()
        await cache_runs(args, bounds, recorder, embedder)
        meta["seconds_cache"] = round(time.perf_counter() - phase, 1)
    if not set(args.groups) - {"scale", "listing", "cache"}:
        return
    with tempfile.TemporaryDirectory(prefix="rag-bench-") as tmp:
        work = Path(tmp)
        corpus = build_corpus(args, bounds, embedder, work / "corpus")
        meta["corpus"] = corpus.describe()
        print(
            f"corpus: {corpus.name}, {len(corpus.documents)} documents, {corpus.chunks} chunks, "
            f"{len(corpus.questions)} questions ({'; '.join(corpus.notes)})"
        )
        await asyncio.to_thread(embedder.embed_passages, corpus.documents[0].chunk_texts[:32])  # warm the model
        bench = Bench(args, bounds, recorder, work)
        async with private_nats(bench.system_dir / "nats") as system_nats:
            phase = time.perf_counter()
            if "ingest" in args.groups:
                print("8. ingest throughput")
                await bench.ingest_runs(corpus, embedder, system_nats.url)
            else:
                await bench.load_once(corpus, system_nats.url)
            meta["seconds_ingest"] = round(time.perf_counter() - phase, 1)
            if set(args.groups) - {"ingest"}:
                print("9-11. query latency, pipeline overhead, throughput")
                phase = time.perf_counter()
                await bench.query_runs(corpus, system_nats.url)
                if "throughput" in args.groups:
                    await bench.processes_runs(corpus, system_nats.url)
                meta["seconds_query"] = round(time.perf_counter() - phase, 1)
        if args.whole:
            await whole_corpus_runs(args, bounds, recorder, embedder, meta, work)


def whole_corpus(args: argparse.Namespace, bounds: Bounds, embedder: Embedder, folder: Path) -> BenchCorpus | None:
    """Every document of the shared corpus, or None (said why) when there is none to measure."""
    root = Path(args.corpus)
    if args.corpus == "synthetic" or not root.is_dir():
        print("  whole corpus: no shared corpus folder, skipped")
        return None
    corpus = shared_corpus(root, None, folder, embedder, IngestSettings(), bounds.questions)
    if len(corpus.questions) < 4:
        print(f"  whole corpus: {len(corpus.questions)} questions, skipped")
        return None
    return corpus


async def whole_corpus_runs(
    args: argparse.Namespace,
    bounds: Bounds,
    recorder: Recorder,
    embedder: Embedder,
    meta: dict[str, Any],
    work: Path,
) -> None:
    """Latency, overhead and throughput again on every document of the shared corpus (1.6k chunks
    for anthropic-docs), on a fresh index and nats-server: the speed targets are judged on the slice
    and on the whole set in one run. The figures are the slice's names with ``whole.`` before them."""
    corpus = await asyncio.to_thread(whole_corpus, args, bounds, embedder, work / "whole-corpus")
    if corpus is None:
        return
    meta["whole_corpus"] = corpus.describe()
    print(
        f"9-11 again on the whole corpus: {len(corpus.documents)} documents, {corpus.chunks} chunks, "
        f"{len(corpus.questions)} questions (figures whole.*)"
    )
    phase = time.perf_counter()
    bench = Bench(args, bounds, recorder, work / "whole")
    recorder.prefix = WHOLE
    try:
        async with private_nats(bench.system_dir / "nats") as system_nats:
            await bench.load_once(corpus, system_nats.url)
            await bench.query_runs(corpus, system_nats.url)
            if "throughput" in args.groups:
                await bench.processes_runs(corpus, system_nats.url)
    finally:
        recorder.prefix = ""
    meta["seconds_whole"] = round(time.perf_counter() - phase, 1)


async def listing_runs(args: argparse.Namespace, bounds: Bounds, recorder: Recorder) -> None:
    """Listing p50 with 10 to 10,000 documents in other collections (``benchmarks.listing``)."""
    sizes = listing.QUICK_SIZES if args.quick else listing.SIZES
    for run in range(1, args.runs + 1):
        recorder.run = run
        recorder.mark()

        def record(name: str, value: float, unit: str, description: str, detail: dict[str, Any] | None) -> None:
            recorder.record(name, value, unit, description, detail)

        with tempfile.TemporaryDirectory(prefix="rag-bench-listing-") as tmp:
            await listing.run(Path(tmp), record, sizes=sizes)


async def cache_runs(args: argparse.Namespace, bounds: Bounds, recorder: Recorder, embedder: Embedder) -> None:
    """The answer cache's threshold figures (once: they do not vary) and hit/full p50 per run (``benchmarks.cache``)."""

    def record(name: str, value: float, unit: str, description: str, detail: dict[str, Any] | None) -> None:
        recorder.record(name, value, unit, description, detail)

    def start(run: int) -> None:
        recorder.run = run
        recorder.mark()

    start(1)
    await asyncio.to_thread(cache.record_threshold, embedder, record)
    with tempfile.TemporaryDirectory(prefix="rag-bench-cache-") as tmp:
        work = Path(tmp)
        await cache.measure_hits(
            work,
            args.model_dir.resolve(),
            record,
            start,
            runs=args.runs,
            questions=bounds.cache_questions,
            seconds=bounds.cache_seconds,
        )
        close_store(work)


async def scale_runs(args: argparse.Namespace, bounds: Bounds, recorder: Recorder, embedder: Embedder) -> None:
    """Retrieval p50 at ~1.6k and ~20k chunks on each embedded backend (``benchmarks.scale``)."""
    large = {"edge": bounds.scale_large, "local": bounds.scale_large_local}
    sizes = {b: (bounds.scale_small, large[b]) for b in scale.BACKENDS}
    default = StoreSettings().vector_backend  # what the services use (RAG_VECTOR_BACKEND)
    for run in range(1, args.runs + 1):
        recorder.run = run
        recorder.mark()

        def record(name: str, value: float, unit: str, description: str, detail: dict[str, Any] | None) -> None:
            recorder.record(name, value, unit, description, detail)

        results = await scale.run(
            embedder,
            args.model_dir.resolve(),
            record,
            sizes=sizes,
            count=bounds.scale_count,
            seconds=bounds.scale_seconds,
        )
        low, high = results[default]
        recorder.record(
            "scale.ratio",
            high.p50_ms / low.p50_ms,
            "ratio",
            f"the default backend's ({default}) retrieval p50 at {high.chunks} / at {low.chunks} chunks",
        )


def run() -> None:
    args = parse_args()
    if args.table is not None:
        print_tables(args.table)
        return
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR, format="%(levelname)s %(name)s %(message)s"
    )
    asyncio.run(main(args))


if __name__ == "__main__":
    run()
