"""The answer cache (``make bench``, group ``cache``, ``python -m benchmarks --only cache``).

Two measurements on the sample corpus, ``samples/orbitly``:

1. **The threshold.** ``samples/orbitly/cache_pairs.jsonl`` pairs a kept question with one asked
   later: near-misses (another plan, another number, the opposite action: another answer) and
   rephrasings (the same answer). Each pair's MiniLM cosine and whether the two may share an
   answer otherwise (``rag_common.store.cache_match.may_serve``: the same anchors, negations,
   degrees and qualifiers) give the closest near-miss the cache could serve and the share of
   rephrasings served at ``RAG_ANSWER_CACHE_MIN_COSINE``. ``cache_adversarial.jsonl`` is scored the
   same way: opposite meanings in close words (negations, comparatives, regions, periods, plans in
   lower case) that must never share an answer, and rephrasings of them. No system runs: the
   cosine is the lookup's own.
2. **A hit through the gateway.** The whole system on a private nats-server with the cache on and
   the corpus loaded; every single-turn question of ``questions.jsonl`` asked once (each a full
   answer: the collection's index version is moved first, so nothing is cached) and then again
   (a hit where the first answer was kept: the retriever finds its key after the router, and the
   evaluator sends it on), at concurrency 1 from a load-generator process. The figure is the hit's p50 over the
   full answer's p50 (target ≤ 0.2). A third pass asks them in lower case without the closing
   "?": the same key, found by the retriever after the router (the path a rephrasing takes, less
   the question's embedding).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import nats
import numpy as np

from benchmarks.loadgen import LoadResult, LoadSpec, run_load_process
from benchmarks.system import private_nats, stack_options
from rag_common.store.answer_cache import DEFAULT_MIN_COSINE, normalize
from rag_common.store.cache_match import may_serve
from rag_common.store.docindex import DocumentIndex
from rag_common.store.embedding import Embedder
from rag_common.wire import subjects
from rag_devrun.corpus import load_corpus
from rag_devrun.stack import Stack
from rag_scorecard.stats import summarize

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "orbitly"
COLLECTION = "orbitly"

Record = Callable[[str, float, str, str, dict[str, Any] | None], None]


@dataclass(frozen=True)
class Pair:
    kept: str
    asked: str
    same: bool  # the same answer (a rephrasing) or another (a near-miss)


@dataclass(frozen=True)
class Scored:
    pair: Pair
    cosine: float
    agree: bool  # the same anchors and the same sense (``may_serve``)

    def hit(self, min_cosine: float) -> bool:
        return self.cosine >= min_cosine and self.agree


ADVERSARIAL = SAMPLE / "cache_adversarial.jsonl"


def load_pairs(path: Path = SAMPLE / "cache_pairs.jsonl") -> list[Pair]:
    return [Pair(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def score_pairs(embedder: Embedder, pairs: list[Pair]) -> list[Scored]:
    """Each pair's cosine as the lookup computes it (the questions' query vectors), and whether it may serve."""
    scored = []
    for pair in pairs:
        kept = np.asarray(embedder.embed_query(pair.kept)[0], dtype=np.float32)
        asked = np.asarray(embedder.embed_query(pair.asked)[0], dtype=np.float32)
        cosine = float(kept @ asked / (np.linalg.norm(kept) * np.linalg.norm(asked)))
        scored.append(Scored(pair, round(cosine, 4), may_serve(pair.kept, pair.asked)))
    return scored


def threshold_figures(scored: list[Scored], min_cosine: float = DEFAULT_MIN_COSINE) -> dict[str, Any]:
    """What the pairs say about ``min_cosine``: the closest near-misses, and how many of each kind it serves."""
    near = [s for s in scored if not s.pair.same]
    same = [s for s in scored if s.pair.same]
    through = [s for s in near if s.agree]  # the near-misses only the cosine can stop
    closest = max(near, key=lambda s: s.cosine)
    closest_through = max(through, key=lambda s: s.cosine) if through else None
    return {
        "min_cosine": min_cosine,
        "near_misses": len(near),
        "rephrasings": len(same),
        "near_miss_max_cosine": closest.cosine,
        "near_miss_max": [closest.pair.kept, closest.pair.asked],
        "near_miss_max_cosine_agreeing": closest_through.cosine if closest_through else None,
        "near_miss_max_agreeing": (
            [closest_through.pair.kept, closest_through.pair.asked] if closest_through else None
        ),
        "near_miss_hits": sum(s.hit(min_cosine) for s in near),
        "rephrasing_hits": sum(s.hit(min_cosine) for s in same),
        "rephrasing_cosines": sorted(s.cosine for s in same),
        "pairs": [
            {"kept": s.pair.kept, "asked": s.pair.asked, "same": s.pair.same, "cosine": s.cosine,
             "agree": s.agree, "hit": s.hit(min_cosine)}
            for s in scored
        ],
    }  # fmt: skip


def record_threshold(embedder: Embedder, record: Record) -> dict[str, Any]:
    figures = threshold_figures(score_pairs(embedder, load_pairs()))
    near, same = figures["near_misses"], figures["rephrasings"]
    record(
        "cache.near_miss_hits",
        figures["near_miss_hits"],
        "pairs",
        f"near-miss pairs of samples/orbitly/cache_pairs.jsonl served at cosine ≥ {figures['min_cosine']} "
        f"with the same anchors and sense, of {near} (another plan, number, action: must be 0)",
        figures,
    )
    record(
        "cache.near_miss_max_cosine_agreeing",
        figures["near_miss_max_cosine_agreeing"] or 0.0,
        "cosine",
        "the closest near-miss whose anchors and sense agree: what the threshold must stay above",
        None,
    )
    record(
        "cache.rephrasing_hit_share",
        figures["rephrasing_hits"] / same,
        "ratio",
        f"rephrasings served at the default threshold, of {same}",
        None,
    )
    adversarial = threshold_figures(score_pairs(embedder, load_pairs(ADVERSARIAL)))
    record(
        "cache.adversarial_wrong_hits",
        adversarial["near_miss_hits"],
        "pairs",
        f"pairs of opposite meaning of samples/orbitly/cache_adversarial.jsonl served, of "
        f"{adversarial['near_misses']} (negations, degrees, regions, periods, plans: must be 0)",
        adversarial,
    )
    record(
        "cache.adversarial_rephrasing_hit_share",
        adversarial["rephrasing_hits"] / adversarial["rephrasings"],
        "ratio",
        f"rephrasings of samples/orbitly/cache_adversarial.jsonl served, of {adversarial['rephrasings']}",
        None,
    )
    print(
        f"  threshold {figures['min_cosine']}: near-misses served {figures['near_miss_hits']}/{near} "
        f"(closest {figures['near_miss_max_cosine']:.4f}, closest that agrees otherwise "
        f"{figures['near_miss_max_cosine_agreeing']:.4f}: {' / '.join(figures['near_miss_max_agreeing'])}); "
        f"rephrasings served {figures['rephrasing_hits']}/{same}; adversarial pairs served "
        f"{adversarial['near_miss_hits']}/{adversarial['near_misses']}, their rephrasings "
        f"{adversarial['rephrasing_hits']}/{adversarial['rephrasings']}",
        flush=True,
    )
    return figures


def single_questions(path: Path = SAMPLE / "questions.jsonl") -> list[str]:
    """The questions of the evaluation set that stand alone (not a conversation's turns)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [row["question"] for row in rows if "question" in row]


async def _pass(base_url: str, questions: list[str], seconds: float) -> LoadResult:
    """Each question once, in order, at concurrency 1, from the load-generator process."""
    spec = LoadSpec(
        base_url=base_url,
        questions=questions,
        concurrency=1,
        max_requests=len(questions),
        max_seconds=seconds,
        collection=COLLECTION,
    )
    result = await run_load_process(spec)
    if result.errors:
        print(f"  ! {result.errors} failed requests: {result.error_samples[:2]}", flush=True)
    return result


async def measure_hits(
    work: Path,
    model_dir: Path,
    record: Record,
    start: Callable[[int], None],
    *,
    runs: int,
    questions: int,
    seconds: float,
) -> None:
    """Full answers, then the same questions again (hits), per run (``start`` is told each run's
    number); the index version is moved before each run so its first pass answers every question
    in full."""
    asked = single_questions()[:questions]
    async with private_nats(work / "nats") as server:
        options = stack_options(work, server.url, model_dir)
        for service in ("retriever", "evaluator"):
            options.overrides.setdefault(service, {})["answer_cache"] = True
        async with Stack(options) as stack:
            async with httpx.AsyncClient(base_url=stack.base_url, timeout=120) as client:
                loaded = await load_corpus(client, SAMPLE / "corpus", COLLECTION, timeout_s=300)
            print(f"  loaded {len(loaded.statuses)} documents, {loaded.chunks} chunks into {COLLECTION}", flush=True)
            connection = await nats.connect(server.url)
            try:
                js = connection.jetstream()
                index = DocumentIndex(js, await js.key_value(subjects.DOC_INDEX_BUCKET))
                await _pass(stack.base_url, asked, seconds)  # warm-up: models, connections, calibration
                for run in range(1, runs + 1):
                    start(run)
                    await index.touch(COLLECTION)  # nothing cached from here on
                    full = await _pass(stack.base_url, asked, seconds)
                    again = await _pass(stack.base_url, asked, seconds)
                    # Other case, no closing "?": the retriever finds the same key after the router
                    # (no model run).
                    normalised = await _pass(stack.base_url, [normalize(q) for q in asked], seconds)
                    _record_run(run, asked, full, again, record)
                    _record_normalised(full, normalised, record)
            finally:
                await connection.close()


def _record_run(run: int, asked: list[str], full: LoadResult, again: LoadResult, record: Record) -> None:
    if any(full.cached):
        raise RuntimeError("a first ask was served from the cache: the index version did not move")
    hits = [ms for ms, cached in zip(again.latencies_ms, again.cached, strict=True) if cached]
    if not hits:
        raise RuntimeError("no second ask was served from the cache")
    # Paired: the same questions' full answers (concurrency 1 keeps the order).
    paired_full = [ms for ms, cached in zip(full.latencies_ms, again.cached, strict=False) if cached]
    full_stats, hit_stats, paired_stats = summarize(full.latencies_ms), summarize(hits), summarize(paired_full)
    detail = {
        "questions": len(asked),
        "full_ms": full_stats,
        "hit_ms": hit_stats,
        "full_of_hit_questions_ms": paired_stats,
        "hits": len(hits),
        "second_asks": again.ok,
        # Where a hit's time goes: the router, the retriever's lookup, the evaluator sending it on, total.
        "hit_stages_ms": _hit_stages(again, ("router", "retriever", "evaluator", "total")),
    }
    record("cache.full_p50_ms", full_stats["p50"], "ms", "POST /v1/query, a full answer (nothing cached), p50", None)
    what = "POST /v1/query, the same question again, served from the cache, p50"
    record("cache.hit_p50_ms", hit_stats["p50"], "ms", what, None)
    record(
        "cache.hit_share",
        len(hits) / max(again.ok, 1),
        "ratio",
        "second asks served from the cache (the rest: flagged or refused answers, never kept)",
        None,
    )
    record(
        "cache.hit_over_full_p50",
        hit_stats["p50"] / full_stats["p50"],
        "ratio",
        "a cache hit's p50 through the gateway / a full answer's p50, same run, concurrency 1",
        detail,
    )
    print(
        f"  run {run}: full answer p50 {full_stats['p50']:.2f} ms (n={full_stats['n']}), "
        f"cache hit p50 {hit_stats['p50']:.2f} ms (n={hit_stats['n']}, {len(hits)}/{again.ok} second asks), "
        f"ratio {hit_stats['p50'] / full_stats['p50']:.3f}; the same questions' full answers p50 "
        f"{paired_stats['p50']:.2f} ms",
        flush=True,
    )


def _hit_stages(result: LoadResult, stages: tuple[str, ...]) -> dict[str, dict[str, float | int]]:
    """Each stage's time in the answers served from the cache, from their ``timings_ms``."""
    served = [timings for timings, cached in zip(result.timings_ms, result.cached, strict=True) if cached]
    return {stage: summarize([timings.get(stage, 0.0) for timings in served]) for stage in stages}


def _record_normalised(full: LoadResult, normalised: LoadResult, record: Record) -> None:
    hits = [ms for ms, cached in zip(normalised.latencies_ms, normalised.cached, strict=True) if cached]
    if not hits:
        raise RuntimeError("no normalised question was served from the cache")
    stats, full_p50 = summarize(hits), summarize(full.latencies_ms)["p50"]
    stages = _hit_stages(normalised, ("router", "retriever", "evaluator", "total"))
    what = "POST /v1/query, the same question in other case without its '?', served by the retriever, p50"
    record("cache.retriever_hit_p50_ms", stats["p50"], "ms", what, {"hit_ms": stats, "stages_ms": stages})
    record(
        "cache.retriever_hit_over_full_p50",
        stats["p50"] / full_p50,
        "ratio",
        "a hit found by the retriever (after the router, three JetStream hops) / a full answer's p50, same run",
        None,
    )
    print(
        f"         retriever's hit (normalised question) p50 {stats['p50']:.2f} ms (n={stats['n']}), "
        f"ratio {stats['p50'] / full_p50:.3f}",
        flush=True,
    )
