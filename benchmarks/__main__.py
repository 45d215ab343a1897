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
import logging
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks import cache, listing, scale
from benchmarks.bench import Bench
from benchmarks.bounds import FULL, QUICK, Bounds
from benchmarks.corpus import BenchCorpus, shared_corpus, synthetic_corpus
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
from benchmarks.system import close_store, private_nats
from rag_common.config.settings import StoreSettings
from rag_common.store.embedding import Embedder, get_embedder
from rag_ingest.settings import IngestSettings

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "eval" / "anthropic-docs" / "corpus"
DEFAULT_MODEL_DIR = ROOT / "data" / "models" / "all-MiniLM-L6-v2-int8"
GROUPS = ("ingest", "latency", "overhead", "throughput", "scale", "listing", "cache")
WHOLE_GROUPS = ("latency", "overhead", "throughput")  # measured again on the whole shared corpus


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
