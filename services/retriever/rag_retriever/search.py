"""The retriever's search for one question, as a list of named steps built once from the settings.

Read top to bottom, ``build_steps`` is what the retriever does (the service logs the list at
start-up): embed the question; search dense and BM25 (and the second dense model's side when set)
and fuse; let the cross-encoder reorder the first candidates when set; put first the document the
question names; pick the ``top_k`` with one chunk per section first; keep them within the token
budget; join each with its neighbouring chunks; refuse below the collection's threshold (or when
the passages miss the question's words); score their quotable sentences for the generator.

Every step reads and writes one ``Pass``. Ranking ideas measured worse than this list left the
tree, with their figures in docs/decisions/0300-decisions-in-force.md.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from rag_common.store import sentence_vectors
from rag_common.store.contract import DENSE, SECOND_DENSE, SPARSE, Hit, SideQuery, Store
from rag_common.store.embedding import Embedder, SecondEmbedder, SparseVector, get_second_embedder
from rag_common.transport.consuming import PermanentError
from rag_common.wire.messages import Passage, QueryRetrieved, QueryRouted, Retrieval, Route
from rag_common.wire.names import check_filters
from rag_retriever.context import estimate_tokens, expand_within, fit_budget, neighbour_keys
from rag_retriever.ranking import keyword_query, prefer_named_source, weighted_dbsf
from rag_retriever.relevance import (
    OFF_TOPIC_PROBES,
    Calibration,
    absent_names,
    absent_rare_words,
    calibrate,
    judge,
    unknown_names_reason,
    unknown_words_reason,
)
from rag_retriever.rerank import Reranker, make_reranker
from rag_retriever.selection import Selection, diversify, escalate, to_passages
from rag_retriever.settings import RetrieverSettings

log = logging.getLogger("rag.retriever")

# Relevance: measured once and fixed (docs/EVALUATION.md); a deployer moves RAG_RETRIEVER_MIN_SIMILARITY.
CALIBRATION_MARGIN = 0.03  # threshold = 90th percentile of the off-topic probes' best scores + this
MAX_THRESHOLD = 0.55  # a calibrated threshold never exceeds this
LEXICAL_MARGIN = 0.12  # just above the threshold, the passages must mention the question's salient words
MIN_COVERAGE = 0.34  # the share of those words they must mention
CONFIDENT_MARGIN = 0.06  # an answer closer than this to the threshold is marked low_confidence
ESCALATE_MARGIN = 0.05  # passages this close to the best similarity count towards escalation
RRF_K = 60  # reciprocal rank fusion constant (with RAG_RETRIEVER_FUSION=rrf)


def search_text(question: str, selected_text: str | None) -> str:
    """What is embedded and searched for a question: the question, and the selected text on its own line."""
    return f"{question}\n{selected_text}" if selected_text else question


@dataclass
class Pass:
    """One question on its way through the steps: each step reads what earlier ones left."""

    collection: str
    question: str  # what the passages must answer: the question as asked, or its rewritten follow-up
    selected_text: str | None  # the text the user selected in a document, asked about with the question
    filters: dict[str, Any]
    route: Route
    vectors: tuple[list[float], SparseVector] = ([], SparseVector([], []))
    second: list[float] | None = None
    hits: list[Hit] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    threshold: float = 0.0
    refused: bool = False
    reason: str | None = None
    low_confidence: str | None = None
    sentence_scores: dict[int, dict[str, float]] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return search_text(self.question, self.selected_text)


@dataclass(frozen=True)
class Step:
    """A named step of the search: changes the ``Pass`` in place."""

    name: str
    run: Callable[[Pass], None]


def describe(steps: Sequence[Step]) -> str:
    """The steps as the start-up log line shows them."""
    return " → ".join(step.name for step in steps)


class Retriever:
    """The resources the steps share (models, store, caches) and the steps built from the settings;
    blocking work: the service runs ``retrieve`` in a thread so the event loop stays free."""

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
        reranker = make_reranker(
            settings.reranker, model_dir=settings.resolved_reranker_model_dir, top_n=settings.rerank_candidates
        )
        self.steps: list[Step] = build_steps(self, reranker)
        log.info("retriever steps: %s", describe(self.steps))

    def embed_text(self, text: str) -> tuple[list[float], SparseVector]:
        """A text's MiniLM and BM25 vectors (cached like a question's)."""
        return self._embed(text)

    # --- the steps ----------------------------------------------------------------------------

    def embed(self, p: Pass) -> None:
        """The question's MiniLM and BM25 vectors and, when its side is searched, the second
        model's, both at once (onnxruntime lets go of the GIL while it runs)."""
        pending: Future[list[float]] | None = None
        if self._second_queries is not None and self.uses_second(p.collection):
            pending = self._second_queries.submit(self._embed_second, p.text)
        if not p.vectors[0]:  # else embedded already (the answer cache's lookup)
            p.vectors = self._embed(p.text)
        p.second = pending.result() if pending is not None else None

    def hybrid_search(self, p: Pass) -> None:
        """The fused candidates: ``top_k``, or ``candidates`` for section diversity to pick from."""
        s = self.settings
        _, p.hits = self.search(p.collection, p.text, p.filters, max(s.top_k, s.candidates), p.vectors, p.second)

    def named_source_first(self, p: Pass) -> None:
        p.hits = prefer_named_source(p.question, p.hits)

    def section_diversity(self, p: Pass) -> None:
        p.hits = diversify(p.hits, self.settings.top_k)

    def budget(self, p: Pass) -> None:
        p.hits = fit_budget(p.hits, self.settings.context_budget_tokens, estimate_tokens)

    def neighbours(self, p: Pass) -> None:
        """Each passage joined with its neighbouring chunks of the same section while the budget allows."""
        s = self.settings
        if p.hits:
            chunks = self.store.fetch_chunks(p.collection, neighbour_keys(p.hits, s.neighbours))
            p.hits = expand_within(
                p.hits, chunks, radius=s.neighbours, budget=s.context_budget_tokens, count=estimate_tokens
            )

    def relevance(self, p: Pass) -> None:
        """The passages, or a refusal: below the collection's threshold, or just above it when they
        miss the question's salient words; and the fast tier escalated for a multi-source answer."""
        p.passages = to_passages(p.hits)
        p.threshold = self.calibration(p.collection).threshold
        best = max((x.similarity for x in p.passages), default=0.0)
        top = [f"{x.source} {x.section} {x.text}" for x in p.passages[:3]]
        verdict = judge(
            f"{p.question} {p.selected_text}" if p.selected_text else p.question,
            best,
            top,
            p.threshold,
            lexical_margin=LEXICAL_MARGIN,
            min_coverage=MIN_COVERAGE,
            confident_margin=CONFIDENT_MARGIN,
        )
        selection = Selection(passages=p.passages, refused=verdict.refused or not p.passages, reason=verdict.reason)
        if not selection.refused:
            texts = [f"{x.source} {x.section} {x.text}" for x in p.passages]
            absent = absent_names(p.question, texts)
            unknown = [n for n in absent if not self.mentions(p.collection, n, p.filters)]
            looked_up = {n.lower(): n in unknown for n in absent}
            rare = [
                w
                for w in absent_rare_words(p.question, texts)
                if looked_up.get(w, not self.mentions(p.collection, w, p.filters))
            ]
            if reason := unknown_names_reason(unknown) or unknown_words_reason(rare):
                selection = Selection(passages=p.passages, refused=True, reason=reason)
        if not p.passages and selection.reason is None:
            selection = Selection(passages=p.passages, refused=True, reason="the collection has no passages")
        p.refused, p.reason = selection.refused, selection.reason
        p.route = escalate(p.route, selection, self.settings.escalate_sources, ESCALATE_MARGIN)
        if verdict.low_confidence and not p.refused:
            p.low_confidence = f"best similarity {best:.2f} is close to this collection's threshold {p.threshold:.2f}"

    def score_sentences(self, p: Pass) -> None:
        """The generator ranks its sentences against the question alone (no selected text)."""
        if p.refused:
            return
        vector = p.vectors[0] if p.text == p.question else self._embed(p.question)[0]
        p.sentence_scores = self.sentence_scores(p.collection, p.hits, vector)

    # --- what the steps use -------------------------------------------------------------------

    def mentions(self, collection: str, name: str, filters: dict[str, Any]) -> bool:
        """Whether any chunk of the collection (within ``filters``) holds ``name``: one BM25-only
        search for the name alone, run only for a name the retrieved passages lack."""
        vector = next(iter(self.embedder.sparse.query_embed(name)))
        if not len(vector.indices):
            return True  # nothing to look up (a name of stop words): not evidence of absence
        side = SideQuery(SPARSE, SparseVector(vector.indices.tolist(), vector.values.tolist()), 1)
        return bool(self.store.search_sides(collection, [side], filters=filters)[0])

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
                    "(docs/decisions/0300-decisions-in-force.md)",
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
        measured = calibrate(scores, floor=floor, margin=CALIBRATION_MARGIN, ceiling=MAX_THRESHOLD)
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
        """One hybrid search; the sparse side gets the question's keywords only (question words
        such as "how" and "use" dropped). ``embedded``: ``text``'s embedding when the caller has
        it already; ``second``: its second model's, likewise (searched only when the collection
        has that vector)."""
        s = self.settings
        dense, sparse = embedded if embedded is not None else self._embed(text)
        dense = list(dense)  # the cached list stays the cache's
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
            prefetch_limit=s.prefetch_limit,
            sparse_prefetch_limit=s.sparse_prefetch_limit,
            rrf_k=RRF_K,
            filters=filters,
            weights=None if s.dense_weight == s.sparse_weight == 1.0 else (s.dense_weight, s.sparse_weight),
            fusion=s.fusion,
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

    # --- one question ---------------------------------------------------------------------------

    def retrieve(
        self,
        routed: QueryRouted,
        rewritten: str | None = None,
        embedded: tuple[list[float], SparseVector] | None = None,
    ) -> QueryRetrieved:
        """The question through every step; ``rewritten``: the follow-up made standalone;
        ``embedded``: the searched text's vectors (``search_text``) when the caller has them."""
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
        p = Pass(
            collection=query.collection,
            question=question,
            selected_text=query.selected_text,
            filters=query.filters,
            route=routed.route,
        )
        if embedded is not None:
            p.vectors = embedded
        for step in self.steps:
            step.run(p)
        retrieval = Retrieval(
            passages=p.passages,
            refused=p.refused,
            refusal_reason=p.reason,
            rewritten_question=rewritten,
            threshold=p.threshold,
            low_confidence=p.low_confidence,
            sentence_scores=p.sentence_scores,
        )
        return QueryRetrieved(
            query=query,
            route=p.route,
            suspicions=routed.suspicions,
            timings_ms=routed.timings_ms,
            retrieval=retrieval,
            profile=routed.profile,
            selection_spans=routed.selection_spans,
        )


def build_steps(retriever: Retriever, reranker: Reranker | None = None) -> list[Step]:
    """The search the settings ask for, in order; a step that would change nothing is left out.
    ``reranker``: reorders the fused candidates (the cross-encoder when set; a benchmark may pass
    its own)."""
    r, s = retriever, retriever.settings
    sides = "MiniLM + second model + BM25 keywords, weighted DBSF" if r.second else f"dense + BM25 keywords, {s.fusion}"
    steps = [Step("embed", r.embed), Step(f"search ({sides})", r.hybrid_search)]
    if reranker is not None:
        steps.append(Step(f"rerank ({reranker.name}, first {s.rerank_candidates})", _rerank(reranker)))
    steps += [
        Step("named source first", r.named_source_first),
        Step(f"one per section (top {s.top_k} of {max(s.top_k, s.candidates)})", r.section_diversity),
    ]
    if s.context_budget_tokens > 0:
        steps.append(Step(f"budget ({s.context_budget_tokens} tokens)", r.budget))
    if s.neighbours > 0:
        steps.append(Step(f"neighbours (±{s.neighbours})", r.neighbours))
    threshold = "calibrated threshold" if s.calibrate else f"threshold {s.min_similarity:.2f}"
    steps += [Step(f"relevance ({threshold})", r.relevance), Step("sentence scores", r.score_sentences)]
    return steps


def _rerank(reranker: Reranker) -> Callable[[Pass], None]:
    def run(p: Pass) -> None:
        p.hits = reranker.rerank(p.question, p.hits)

    return run


def _no_second(text: str) -> list[float]:
    raise RuntimeError("the second dense model is off (RAG_SECOND_DENSE=false)")
