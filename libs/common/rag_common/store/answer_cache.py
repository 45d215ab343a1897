"""The semantic answer cache: an earlier answer served again instead of asking the stages.

To the same question, or to one that means the same, in the same collection, for the same
tenant, while the collection's index is unchanged.

What is kept: a final answer the evaluator passed with no flag raised (not refused, no conflict,
nothing ungrounded, no injection), to a question asked outside a conversation. Where: the
key-value bucket ``rag-answer-cache`` (TTL ``RAG_ANSWER_CACHE_TTL_S``), two keys per answer (see
``rag_common.wire.messages.cache``). Why a bucket and not the vector store: the evaluator, which decides
what is kept, holds no vector store (an embedded store has one owning process), the bucket's TTL
forgets old answers with no sweep, and every replica reads the same keys
(docs/decisions/0300-decisions-in-force.md).

A question is served from the cache when, all at once:

- it has no history (a conversation's follow-up depends on the turns before it), its caller has a
  tenant (``Query.tenant``) and the router found nothing suspicious in it;
- an answer is kept under the same tenant and collection (both in the key), the same filters and
  selected text (``context_digest``), and the collection's current index version
  (``DocumentIndex.version``: every upload, delete or profile change moves it);
- the kept question's MiniLM cosine to it is at least ``RAG_ANSWER_CACHE_MIN_COSINE``, both
  name the same numbers and capitalised names ("Pro" and "Business" differ however close the
  sentences are), and both mean the same way: the same negations, comparatives and superlatives,
  regions, periods and plans, whatever the case ("does not include" never meets "includes", nor
  "eu" "us": ``cache_match.may_serve``, docs/decisions/0300-decisions-in-force.md). The same
  normalised question is found by its key at once.

Two owners, one for each end (docs/decisions/0355-decisions-in-force-from-0290-to-0330.md): the retriever
alone looks up, first thing (the same normalised question by its key, before any model run; then,
with the question embedded, the nearest kept one in its in-memory ``Mirror``). It is the first
stage that has both what a lookup needs: the router's verdict on the question and its vector,
which the search reuses. On a hit it hands the evaluator the kept answer (``served``), which the
evaluator sends on unchecked, so every final answer reaches the gateway from the evaluator; on a
miss it hands the evaluator a ``CacheKey`` and the evaluator keeps the answer
(``AnswerCache.keep``) when ``why_not_kept`` finds no reason against it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from faststream.nats import NatsBroker
from nats.js.api import StorageType
from nats.js.errors import BadRequestError, KeyNotFoundError
from nats.js.kv import KeyValue
from prometheus_client import CollectorRegistry, Counter
from pydantic import AliasChoices, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from rag_common.config.settings import ServiceSettings
from rag_common.store.cache_mirror import Mirror, encode_vector
from rag_common.store.docindex import DocumentIndex
from rag_common.wire import subjects
from rag_common.wire.messages import CacheKey, CacheScope, Query, QueryAnswered, QueryDrafted, QueryRouted, Usage
from rag_common.wire.messages.cache import CachedAnswer, CachedQuestion

log = logging.getLogger("rag.answer_cache")

# Measured on samples/orbitly (benchmarks/cache.py, docs/decisions/0300-decisions-in-force.md): the
# closest near-miss that the anchors let through is 0.94 ("... cost per month?" / "... per year?"),
# most rephrasings score 0.95 to 0.99.
DEFAULT_MIN_COSINE = 0.95
SERVED_TIERS = ("fast", "strong")  # a greeting or a blocked question never reaches the retriever
TENANT_RE = re.compile(r"[A-Za-z0-9-]{1,80}")  # a key part: the gateway's Principal.owner


class AnswerCacheSettings(BaseSettings):
    """The answer cache's settings, one value for the two processes that use the cache.

    Read alike by the retriever (lookups) and the evaluator (what is kept).
    """

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    answer_cache: bool = Field(
        True,
        validation_alias=AliasChoices("RAG_ANSWER_CACHE"),
        description="serve an earlier unflagged answer to the same question (or one meaning the same) in the same "
        "collection, for the same tenant, while the collection's documents are unchanged; never in a conversation",
    )
    answer_cache_min_cosine: float = Field(
        DEFAULT_MIN_COSINE,
        ge=0.5,
        le=1.0,
        validation_alias=AliasChoices("RAG_ANSWER_CACHE_MIN_COSINE"),
        description="answer cache: the least MiniLM cosine between a kept question and a new one for a hit (0.95 "
        "measured on samples/orbitly: a rephrasing hits, a question about another plan misses)",
    )
    answer_cache_ttl_s: float = Field(
        24 * 3600.0,
        gt=0,
        validation_alias=AliasChoices("RAG_ANSWER_CACHE_TTL_S"),
        description="answer cache: how long a kept answer may be served (the bucket's TTL)",
    )
    answer_cache_max_bytes: int = Field(
        128 * 1024 * 1024,
        ge=1024 * 1024,
        validation_alias=AliasChoices("RAG_ANSWER_CACHE_MAX_BYTES"),
        description="answer cache: the bucket's size; when full, new answers are not kept until old ones expire",
    )


# --- keys and digests (pure) ------------------------------------------------------------------------


def normalize(question: str) -> str:
    """The question as its key sees it: case, runs of spaces and closing punctuation do not count."""
    return " ".join(question.casefold().split()).rstrip("?!. ")


def context_digest(filters: Mapping[str, Any], selected_text: str | None) -> str:
    """What besides the question decides the answer: its payload filters and selected text."""
    canonical = json.dumps({"filters": filters, "selected_text": selected_text}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def question_digest(question: str, context: str) -> str:
    """The last part of a question's keys: the same normalised question in the same context shares it."""
    return hashlib.sha256(f"{normalize(question)}\0{context}".encode()).hexdigest()[:32]


def question_key(tenant: str, collection: str, digest: str) -> str:
    """Where a kept question lives: followed by every retriever replica, so it stays small."""
    return f"q.{tenant}.{collection}.{digest}"


def answer_key(tenant: str, collection: str, digest: str) -> str:
    """Where a kept answer lives: read once, on a hit."""
    return f"a.{tenant}.{collection}.{digest}"


# --- what may be looked up, what may be kept (pure) -------------------------------------------------


def why_not_looked_up(routed: QueryRouted) -> str | None:
    """Why this question may not be answered from the cache (None: it may)."""
    query = routed.query
    if query.tenant is None or TENANT_RE.fullmatch(query.tenant) is None:
        return "no tenant"
    if query.history:
        return "a conversation with earlier turns"
    if routed.suspicions or routed.route.attack_dropped:
        return "injection suspected"
    if routed.route.tier not in SERVED_TIERS:
        return f"tier {routed.route.tier}"
    return None


def why_not_kept(answered: QueryAnswered) -> str | None:
    """Why this final answer may not be kept (None: it may).

    Only a looked-up question's answer, passed by the evaluator with no flag raised, is.
    """
    if answered.retrieval.cache is None or answered.cached:
        return "not looked up"
    raised = sorted(name for name, on in answered.evaluation.flags.items() if on)
    if raised:
        return f"flag raised: {', '.join(raised)}"
    if answered.evaluation.flagged or answered.draft.refused or answered.retrieval.refused:
        return "refused or flagged"
    if answered.query.history:
        return "a conversation with earlier turns"
    if answered.suspicions or answered.route.attack_dropped or answered.draft.preface:
        return "injection suspected"
    if answered.route.tier not in SERVED_TIERS:
        return f"tier {answered.route.tier}"
    return None


def fits(cached: CacheScope, scope: CacheScope) -> bool:
    """Whether a kept answer may serve a question of ``scope``: same tenant, collection, version, context."""
    return (cached.tenant, cached.collection, cached.version, cached.context) == (
        scope.tenant,
        scope.collection,
        scope.version,
        scope.context,
    )


def served(cached: CachedAnswer, routed: QueryRouted, timings_ms: dict[str, float]) -> QueryDrafted:
    """The drafted message for ``routed``'s question from a kept answer, for the evaluator to send on.

    This request's query, profile and timings, the kept parts, no usage (nothing was spent on it),
    and the evaluation it was kept with (``kept``): nothing is checked again, and the final answer
    says ``cached``.
    """
    return QueryDrafted(
        query=routed.query,
        route=cached.route,
        timings_ms=timings_ms,
        profile=routed.profile,
        retrieval=cached.retrieval,
        draft=cached.draft.model_copy(update={"usage": Usage()}),
        kept=cached.evaluation,
    )


# --- metrics ----------------------------------------------------------------------------------------


def hit_counter(registry: CollectorRegistry) -> Counter:
    """The retriever's: questions answered from the cache (the same after normalising, or a rephrasing)."""
    return Counter("rag_answer_cache_hits_total", "Questions answered from the answer cache", registry=registry)


def miss_counter(registry: CollectorRegistry) -> Counter:
    """The retriever's: questions looked up and not found (a conversation's are not looked up)."""
    return Counter(
        "rag_answer_cache_misses_total",
        "Questions looked up in the answer cache and not found (a conversation's questions are not looked up)",
        registry=registry,
    )


def kept_counter(registry: CollectorRegistry) -> Counter:
    """The evaluator's: answers kept in the answer cache."""
    return Counter("rag_answer_cache_stores_total", "Answers kept in the answer cache", registry=registry)


def invalidation_counter(registry: CollectorRegistry) -> Counter:
    """Changes of a collection's index version, each of which retires its cached answers.

    The gateway's and ingest's: an upload or delete accepted, ingest changing the index, a
    profile set.
    """
    return Counter(
        "rag_answer_cache_invalidations_total",
        "Changes of a collection's index version, each retiring the collection's cached answers",
        registry=registry,
    )


# --- the bucket -------------------------------------------------------------------------------------


async def open_answer_cache_bucket(broker: NatsBroker, settings: ServiceSettings, cache: AnswerCacheSettings) -> Any:
    """The answer cache bucket, declared if missing.

    A bucket declared with another TTL or size gets the settings' values.
    """
    try:
        return await broker.key_value(
            subjects.ANSWER_CACHE_BUCKET,
            storage=StorageType.FILE,
            replicas=settings.js_replicas,
            history=1,
            ttl=cache.answer_cache_ttl_s,
            max_bytes=cache.answer_cache_max_bytes,
        )
    except BadRequestError:  # declared before with other limits
        js = broker.connection.jetstream()
        stream = f"KV_{subjects.ANSWER_CACHE_BUCKET}"
        config = (await js.stream_info(stream)).config
        config.max_age, config.max_bytes = cache.answer_cache_ttl_s, cache.answer_cache_max_bytes
        config.duplicate_window = min(120.0, cache.answer_cache_ttl_s)  # as nats-py declares a bucket
        await js.update_stream(config)
        return await js.key_value(subjects.ANSWER_CACHE_BUCKET)


@dataclass(frozen=True)
class Lookup:
    """What a lookup found: a kept answer (a hit) or where to keep this question's own (a miss).

    A hit says how close its question was; a miss carries the key the question's answer is to be
    kept under.
    """

    hit: CachedAnswer | None = None
    cosine: float | None = None  # the hit's, or the nearest kept question's when its answer was gone
    key: CacheKey | None = None  # set on a miss


class AnswerCache:
    """Reads (retriever) and writes (evaluator) the answer cache bucket ``kv``.

    ``index`` gives the collections' index versions (the retriever's; None where nothing is looked
    up).
    """

    def __init__(self, kv: KeyValue, settings: AnswerCacheSettings, index: DocumentIndex | None = None) -> None:
        self.kv, self.settings, self.index = kv, settings, index
        self.mirror = Mirror()

    async def lookup(self, query: Query, embed: Callable[[], Awaitable[Sequence[float]]]) -> Lookup:
        """The kept answer for ``query``, found by its key first and by its meaning next.

        The same normalised question by its key (no model run), else the kept question nearest to
        its MiniLM vector (``embed`` gives it) in the mirror.
        """
        scope, digest, exact = await self._same_question(query)
        if exact is not None and normalize(exact.question) == normalize(query.question):
            return Lookup(exact, 1.0)
        vector = await embed()
        key = CacheKey(**scope.model_dump(), digest=digest, question=query.question, vector=encode_vector(vector))
        not_before = time.time() - self.settings.answer_cache_ttl_s
        nearest = self.mirror.nearest(
            scope, vector, query.question, min_cosine=self.settings.answer_cache_min_cosine, not_before=not_before
        )
        if nearest is None:
            return Lookup(key=key)
        found = await self._answer("a." + nearest.key[2:])
        if found is None or not fits(found, scope) or found.stored_at < not_before:
            self.mirror.remove(nearest.key)  # expired or replaced: the watch may not say so
            return Lookup(cosine=nearest.cosine, key=key)
        return Lookup(found, nearest.cosine)

    async def _same_question(self, query: Query) -> tuple[CacheScope, str, CachedAnswer | None]:
        """The question's scope, its key's digest, and the answer kept under that key if still good.

        The scope holds its collection's index version read now; the kept answer counts when it
        fits the scope and is younger than the TTL (the bucket drops it a little later).
        """
        if self.index is None or query.tenant is None:
            raise RuntimeError("lookups need the document index and a tenant")
        context = context_digest(query.filters, query.selected_text)
        digest = question_digest(query.question, context)
        version, kept = await asyncio.gather(
            self.index.version(query.collection), self._answer(answer_key(query.tenant, query.collection, digest))
        )
        scope = CacheScope(tenant=query.tenant, collection=query.collection, version=version, context=context)
        fresh = (
            kept is not None and fits(kept, scope) and kept.stored_at >= time.time() - self.settings.answer_cache_ttl_s
        )
        return scope, digest, kept if fresh else None

    async def _answer(self, key: str) -> CachedAnswer | None:
        try:
            entry = await self.kv.get(key)
        except KeyNotFoundError:
            return None
        if not entry.value:
            return None
        try:
            return CachedAnswer.model_validate_json(entry.value)
        except ValidationError as exc:  # written by another version: a miss, overwritten by the next keep
            log.warning("unreadable cached answer %s: %s", key, exc)
            return None

    async def keep(self, answered: QueryAnswered) -> bool:
        """Keep ``answered`` under the key its retriever gave, unless ``why_not_kept`` objects."""
        key = answered.retrieval.cache
        if key is None or why_not_kept(answered) is not None:
            return False
        now = time.time()
        scope = {"tenant": key.tenant, "collection": key.collection, "version": key.version, "context": key.context}
        answer = CachedAnswer(
            **scope,
            question=key.question,
            stored_at=now,
            route=answered.route,
            retrieval=answered.retrieval.model_copy(update={"cache": None}),
            draft=answered.draft,
            evaluation=answered.evaluation,
        )
        record = CachedQuestion(**scope, question=key.question, vector=key.vector, stored_at=now)
        # Both at once: a question key seen before its answer is a miss, never a wrong answer.
        await asyncio.gather(
            self.kv.put(answer_key(key.tenant, key.collection, key.digest), answer.model_dump_json().encode()),
            self.kv.put(question_key(key.tenant, key.collection, key.digest), record.model_dump_json().encode()),
        )
        return True

    def apply(self, entry: KeyValue.Entry) -> None:
        """One update of a ``q.`` key into the mirror: a put adds, a delete or purge removes."""
        if entry.operation is not None or not entry.value:
            self.mirror.remove(entry.key)
            return
        try:
            self.mirror.put(entry.key, CachedQuestion.model_validate_json(entry.value))
        except (ValidationError, ValueError) as exc:
            log.warning("unreadable cached question %s: %s", entry.key, exc)

    async def follow(self, retry_s: float = 1.0) -> None:
        """Keep the mirror in step with the bucket's question keys until cancelled.

        A watch that fails is started again (the mirror refilled from the keys there are);
        meanwhile the same question is still found by its key, and a rephrasing is a miss.
        """
        while True:
            watcher = None
            try:
                watcher = await self.kv.watch("q.>")
                self.mirror.clear()
                async for entry in watcher:
                    if entry is not None:
                        self.apply(entry)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("answer cache watch failed, starting again: %r", exc)
            finally:
                if watcher is not None:
                    with contextlib.suppress(Exception):
                        await watcher.stop()  # type: ignore[no-untyped-call]  # nats-py leaves it untyped
            await asyncio.sleep(retry_s)
