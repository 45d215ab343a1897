"""Retriever service: embeds the question, searches dense + BM25 with fusion, refuses when nothing fits."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from functools import lru_cache
from typing import Any

from faststream import FastStream
from faststream.nats import NatsBroker

from rag_common import sentence_vectors, subjects
from rag_common.embedding import Embedder, SecondEmbedder, SparseVector, get_embedder, get_second_embedder
from rag_common.messages import Query, QueryRetrieved, QueryRouted, Retrieval
from rag_common.names import check_filters
from rag_common.telemetry import ServiceTelemetry, setup_telemetry
from rag_common.transport.broker import make_broker
from rag_common.transport.consuming import PermanentError, register_query_stage
from rag_common.transport.publishing import publish_stage
from rag_common.transport.service import create_service, register_ping
from rag_common.vectors import DENSE, SECOND_DENSE, SPARSE, Hit, SideQuery, Store, configured_store
from rag_retriever.context import estimate_tokens, expand_within, fit_budget, neighbour_keys
from rag_retriever.ranking import (
    cover_parts,
    downweight_boilerplate,
    file_evidence,
    fuse,
    keyword_query,
    mmr,
    penalize_used,
    prefer_named_source,
    second_section_of_top_file,
    section_units,
    split_question,
    weighted_dbsf,
)
from rag_retriever.relevance import OFF_TOPIC_PROBES, Calibration, calibrate, judge
from rag_retriever.rerank import make_reranker
from rag_retriever.rewriting import rewrite
from rag_retriever.selection import Selection, diversify, escalate, to_passages
from rag_retriever.settings import RetrieverSettings

log = logging.getLogger("rag.retriever")


class Retriever:
    """Search for one question; blocking work runs in a thread so the event loop stays free."""

    def __init__(
        self,
        settings: RetrieverSettings,
        embedder: Embedder,
        store: Store,
        second: SecondEmbedder | None = None,
    ) -> None:
        self.settings = settings
        self.embedder = embedder
        self.store = store
        # The second dense model (RAG_SECOND_DENSE): loaded here, so a missing folder stops the
        # service at start-up; weight 0 leaves its side out, and so the model too.
        self.second: SecondEmbedder | None = None
        if settings.second_dense and settings.second_dense_weight > 0:
            self.second = second or get_second_embedder(settings.resolved_second_model_dir)
        self._second_in: dict[str, bool] = {}  # per collection: has it the second vector?
        self._second_queries = (
            ThreadPoolExecutor(settings.concurrency, thread_name_prefix="second-query") if self.second else None
        )
        self._probes: list[list[float]] | None = None
        self._calibrations: dict[str, tuple[int, Calibration]] = {}
        self._lock = threading.Lock()
        self.reranker = make_reranker(
            settings.reranker,
            settings.rerank_heading_weight,
            settings.rerank_text_weight,
            model_dir=settings.resolved_reranker_model_dir,
            top_n=settings.rerank_candidates,
            fused_weight=settings.rerank_fused_weight,
            max_tokens=settings.rerank_max_tokens,
        )
        # A repeated question (a FAQ, a retry, a regenerated answer) skips the model (~10 ms).
        self._embed = (
            lru_cache(maxsize=settings.query_cache_size)(embedder.embed_query)
            if settings.query_cache_size
            else embedder.embed_query
        )
        self._embed_second: Callable[[str], list[float]] = (
            self.second.embed_query if self.second is not None else _no_second
        )
        if self.second is not None and settings.query_cache_size:
            self._embed_second = lru_cache(maxsize=settings.query_cache_size)(self.second.embed_query)

    def uses_second(self, collection: str) -> bool:
        """Whether questions to this collection search the second dense model's side too: the
        setting is on and the collection has that vector (one created before it existed has not,
        and is searched with MiniLM and BM25 alone; logged once per collection)."""
        if self.second is None:
            return False
        known = self._second_in.get(collection)
        if known is None:
            known = self.store.has_second_dense(collection)
            if not known:
                log.warning(
                    "collection %s has no vector for the second dense model (created before it existed): "
                    "searched with MiniLM and BM25 only; index its documents into a new collection to use it "
                    "(docs/decisions/0005-second-dense-model-opt-in.md)",
                    collection,
                )
            self._second_in[collection] = known
        return known

    def calibration(self, collection: str) -> Calibration:
        """The collection's threshold, measured again when its size changed by 10 % or more."""
        floor = self.settings.min_similarity
        if not self.settings.calibrate:
            return Calibration(threshold=floor, noise_p90=0.0, noise_max=0.0, probes=0)
        size = self.store.count(collection)
        with self._lock:
            cached = self._calibrations.get(collection)
            if cached and abs(size - cached[0]) * 10 < max(cached[0], 1):
                return cached[1]
            if self._probes is None:
                self._probes = self.embedder.embed_dense(OFF_TOPIC_PROBES)
            probes = self._probes
        scores = self.store.best_similarities(collection, probes)
        measured = calibrate(
            scores, floor=floor, margin=self.settings.calibration_margin, ceiling=self.settings.max_threshold
        )
        log.info("calibrated %s: %s", collection, measured)
        with self._lock:
            self._calibrations[collection] = (size, measured)
        return measured

    def search(
        self,
        collection: str,
        text: str,
        filters: dict[str, Any],
        limit: int,
        embedded: tuple[list[float], SparseVector] | None = None,
        second: list[float] | None = None,
    ) -> tuple[list[float], list[Hit]]:
        """One hybrid search; the sparse side gets only the question's keywords when so set.
        ``embedded``: ``text``'s embedding when the caller has it already; ``second``: its second
        model's, likewise (searched only when the collection has that vector)."""
        dense, sparse = embedded if embedded is not None else self._embed(text)
        dense = list(dense)  # the cached list stays the cache's
        if self.settings.keyword_sparse:
            keywords = keyword_query(text)
            if keywords != text:
                vector = next(iter(self.embedder.sparse.query_embed(keywords)))  # BM25 only: no model run
                sparse = SparseVector(vector.indices.tolist(), vector.values.tolist())
        if self.uses_second(collection):
            return dense, self._search_three(collection, text, filters, limit, dense, sparse, second)
        hits = self.store.hybrid_search(
            collection,
            dense,
            sparse,
            limit=limit,
            prefetch_limit=self.settings.prefetch_limit,
            sparse_prefetch_limit=self.settings.sparse_prefetch_limit,
            rrf_k=self.settings.rrf_k,
            filters=filters,
            weights=None
            if self.settings.dense_weight == self.settings.sparse_weight == 1.0
            else (self.settings.dense_weight, self.settings.sparse_weight),
            fusion=self.settings.fusion,
        )
        return dense, hits

    def _search_three(
        self,
        collection: str,
        text: str,
        filters: dict[str, Any],
        limit: int,
        dense: list[float],
        sparse: SparseVector,
        second: list[float] | None,
    ) -> list[Hit]:
        """MiniLM's, the second model's and BM25's rankings, each searched on its own, fused by
        weighted DBSF (``dense_weight``, ``second_dense_weight``, ``sparse_weight``); a side of
        weight 0 is not searched. ``similarity`` stays each hit's MiniLM cosine."""
        s = self.settings
        second_vector = second if second is not None else self._embed_second(text)
        sides = [
            (SideQuery(DENSE, dense, s.prefetch_limit), s.dense_weight),
            (SideQuery(SECOND_DENSE, list(second_vector), s.second_prefetch_limit), s.second_dense_weight),
            (SideQuery(SPARSE, sparse, s.sparse_prefetch_limit), s.sparse_weight),
        ]
        searched = [(side, weight) for side, weight in sides if weight > 0]
        rankings = self.store.search_sides(collection, [side for side, _ in searched], filters=filters)
        fused = weighted_dbsf(rankings, [weight for _, weight in searched])[:limit]
        found = self.store.fetch_hits(collection, [key for key, _ in fused], dense)
        return [replace(found[key], score=score) for key, score in fused if key in found]

    def context(self, collection: str, hits: list[Hit]) -> list[Hit]:
        """What the generator reads: the passages within the token budget, each joined with its
        neighbouring chunks of the same section while the budget allows (each behind its setting)."""
        s = self.settings
        count = estimate_tokens
        hits = fit_budget(hits, s.context_budget_tokens, count)
        if s.neighbours > 0 and hits:
            chunks = self.store.fetch_chunks(collection, neighbour_keys(hits, s.neighbours))
            hits = expand_within(hits, chunks, radius=s.neighbours, budget=s.context_budget_tokens, count=count)
        return hits

    def sentence_scores(self, collection: str, hits: list[Hit], question: list[float]) -> dict[int, dict[str, float]]:
        """Per passage (numbered from 1 in ``hits`` order), the similarity to the question of each
        quotable unit whose vector ingest stored in the passage's chunks (a passage joined with its
        neighbours has theirs too); passages of chunks stored without vectors get none."""
        joined: list[list[tuple[str, str, int]]] = []  # per hit, the neighbouring chunks joined to it
        for h in hits:
            doc, version = str(h.payload.get("document_id", "")), str(h.payload.get("content_hash", ""))
            own = int(h.payload.get("chunk_index", 0))
            first, last = h.payload.get("chunk_span") or (own, own)
            joined.append([(doc, version, i) for i in range(int(first), int(last) + 1) if i != own])
        wanted = [key for keys in joined for key in keys]
        neighbours = self.store.fetch_chunks(collection, wanted) if wanted else {}
        scores: dict[int, dict[str, float]] = {}
        for n, (h, keys) in enumerate(zip(hits, joined, strict=True), start=1):
            payloads = [h.payload, *(neighbours[(d, i)] for d, _, i in keys if (d, i) in neighbours)]
            found = sentence_vectors.scores(question, payloads)
            if found:
                scores[n] = found
        return scores

    def rank(
        self,
        collection: str,
        text: str,
        question: str,
        filters: dict[str, Any],
        used: dict[str, int] | None = None,
        embedded: tuple[list[float], SparseVector] | None = None,
        second: list[float] | None = None,
    ) -> list[Hit]:
        """Search, fuse the parts of a two-part question, down-weight boilerplate, then pick the
        top_k with MMR or section diversity (each step behind its setting)."""
        s = self.settings
        limit = max(s.top_k, s.candidates if (s.diversify_sections or s.mmr) else 0)
        dense, hits = self.search(collection, text, filters, limit, embedded, second)
        parts = split_question(question) if s.split_questions else []
        part_rankings: list[list[Hit]] = []
        if parts and s.split_mode == "cover":
            part_rankings = [
                [  # similarity stays the cosine to the whole question: the relevance threshold is about it
                    replace(h, similarity=sum(a * b for a, b in zip(dense, h.dense, strict=False))) if h.dense else h
                    for h in self.search(collection, part, filters, limit)[1][:1]
                ]
                for part in parts
            ]
        elif parts:
            rankings = [hits] + [self.search(collection, part, filters, limit)[1] for part in parts]
            fused = fuse(rankings, s.rrf_k)
            # similarity stays the cosine to the whole question: the relevance threshold is about it
            hits = [
                replace(h, similarity=sum(a * b for a, b in zip(dense, h.dense, strict=False))) if h.dense else h
                for h in fused
            ][:limit]
        if s.section_units:
            hits = section_units(hits, s.section_child_weight)
        if self.reranker is not None:
            hits = self.reranker.rerank(question, hits)
        top = select_top(question, hits, s, used)
        if part_rankings and not s.mmr:
            top = cover_parts(top, part_rankings, s.top_k)
        return top

    def retrieve(self, routed: QueryRouted, rewritten: str | None = None) -> QueryRetrieved:
        query = routed.query
        try:  # the gateway refuses these already; a message from elsewhere fails at once, clearly
            check_filters(query.filters)
        except ValueError as exc:
            raise PermanentError("invalid_filters", str(exc), 422) from None
        if not self.store.collection_exists(query.collection):  # the name itself is checked by the model
            # A sound question whose answer is 404 (nothing uploaded there yet): not a dead letter.
            raise PermanentError(
                "collection_not_found", f"unknown collection {query.collection!r}", 404, dead_letter=False
            )
        question = rewritten or query.question
        text = question if not query.selected_text else f"{question}\n{query.selected_text}"
        # The two models embed the question at once (onnxruntime lets go of the GIL while it runs).
        pending: Future[list[float]] | None = None
        if self._second_queries is not None and self.uses_second(query.collection):
            pending = self._second_queries.submit(self._embed_second, text)
        embedded = self._embed(text)
        second = pending.result() if pending is not None else None
        hits = self.rank(query.collection, text, question, query.filters, used_sources(query), embedded, second)
        hits = self.context(query.collection, hits)
        passages = to_passages(hits)
        threshold = self.calibration(query.collection).threshold
        best = max((p.similarity for p in passages), default=0.0)
        top = [f"{p.source} {p.section} {p.text}" for p in passages[:3]]
        verdict = judge(
            question if not query.selected_text else f"{question} {query.selected_text}",
            best,
            top,
            threshold,
            lexical_margin=self.settings.lexical_margin,
            min_coverage=self.settings.min_coverage,
            confident_margin=self.settings.confident_margin,
        )
        selection = Selection(passages=passages, refused=verdict.refused or not passages, reason=verdict.reason)
        if not passages and selection.reason is None:
            selection = Selection(passages=passages, refused=True, reason="the collection has no passages")
        route = escalate(routed.route, selection, self.settings.escalate_sources, self.settings.escalate_margin)
        low = None
        if verdict.low_confidence and not selection.refused:
            low = f"best similarity {best:.2f} is close to this collection's threshold {threshold:.2f}"
        scores: dict[int, dict[str, float]] = {}
        if self.settings.sentence_scores and not selection.refused:
            # The generator ranks its sentences against the question alone (no selected text).
            vector = embedded[0] if text == question else self._embed(question)[0]
            scores = self.sentence_scores(query.collection, hits, vector)
        retrieval = Retrieval(
            passages=selection.passages,
            refused=selection.refused,
            refusal_reason=selection.reason,
            rewritten_question=rewritten,
            threshold=threshold,
            low_confidence=low,
            sentence_scores=scores,
        )
        return QueryRetrieved(
            query=query, route=route, suspicions=routed.suspicions, timings_ms=routed.timings_ms, retrieval=retrieval
        )


def select_top(question: str, hits: list[Hit], s: RetrieverSettings, used: dict[str, int] | None = None) -> list[Hit]:
    """The steps after the reranker, each behind its setting: file-level evidence, boilerplate
    down-weighted, the usage penalty, the named source first, then the ``top_k`` by MMR or with
    one chunk per section first (and the first passage's file given a second section)."""
    if s.file_evidence_weight > 0:
        hits = file_evidence(hits, s.file_evidence_weight)
    hits = downweight_boilerplate(hits, s.boilerplate_weight)
    if used and s.usage_penalty < 1.0:
        hits = penalize_used(hits, used, s.usage_penalty)
    if s.named_source_first:
        hits = prefer_named_source(question, hits)
    if s.mmr:
        return mmr(hits, s.top_k, s.mmr_lambda)
    top = diversify(hits, s.top_k) if s.diversify_sections else hits[: s.top_k]
    if s.file_second_section:
        top = second_section_of_top_file(top, hits)
    return top


def _no_second(text: str) -> list[float]:
    raise RuntimeError("the second dense model is off (RAG_SECOND_DENSE=false)")


def used_sources(query: Query) -> dict[str, int]:
    """How many earlier turns of the conversation cited each source (for the usage penalty)."""
    counts: dict[str, int] = {}
    for turn in query.history or []:
        for source in set(turn.sources):
            counts[source] = counts.get(source, 0) + 1
    return counts


def build_broker(settings: RetrieverSettings, telemetry: ServiceTelemetry, state: dict[str, Retriever]) -> NatsBroker:
    broker = make_broker(settings, telemetry)

    async def on_routed(routed: QueryRouted) -> None:
        with telemetry.stage("retriever") as timer:
            rewritten = await rewrite(routed.query.question, routed.query.history or [], settings)
            with telemetry.tracer.start_as_current_span("hybrid_search"):
                retrieved = await asyncio.to_thread(
                    state["retriever"].retrieve, routed, rewritten.question if rewritten else None
                )
        retrieved.timings_ms["retriever"] = timer.ms
        await publish_stage(broker, retrieved, subjects.QUERY_RETRIEVED)

    async def check() -> dict[str, Any]:
        await asyncio.to_thread(state["retriever"].store.ping)
        return {"vector_store": "ok"}

    register_query_stage(
        broker,
        settings,
        telemetry,
        subject=subjects.QUERY_ROUTED,
        consumer=subjects.RETRIEVER_CONSUMER,
        model=QueryRouted,
        work=on_routed,
    )
    register_ping(broker, "retriever", check)
    return broker


def create_app(settings: RetrieverSettings, telemetry: ServiceTelemetry | None = None) -> FastStream:
    telemetry = telemetry or setup_telemetry("retriever", settings=settings)
    state: dict[str, Retriever] = {}

    async def load() -> None:
        embedder = await asyncio.to_thread(get_embedder, settings.resolved_model_dir)
        store = configured_store(settings)
        state["retriever"] = Retriever(settings, embedder, store)

    return create_service(build_broker(settings, telemetry, state), settings, telemetry, load=load)
