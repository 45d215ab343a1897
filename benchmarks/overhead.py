"""What the message bus costs per question: the same stage functions in-process versus over NATS.

In-process: ``decide`` → ``Retriever.retrieve`` → ``Generator.draft`` → ``assess``/``final_answer``,
called one after the other with the running system's embedder and vector store (the same
process-wide objects its retriever uses). Neither path streams (``Query.stream`` false, as the
gateway asks for ``POST /v1/query``): no token deltas.

Over NATS: ``QueryRequested`` published on JetStream, exactly as the gateway does, and the final
answer awaited on this client's own answer subject (``rag.answer.<id>.*.*``); no HTTP. Through the
gateway (HTTP) is measured in the same rotation for reference. The three paths take turns on each
question, so drift in machine load hits them alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from rag_common.store.embedding import get_embedder
from rag_common.store.factory import configured_store
from rag_common.transport.telemetry import setup_telemetry
from rag_common.wire import subjects
from rag_common.wire.messages import (
    AnswerDelta,
    AnswerError,
    Query,
    QueryAnswered,
    QueryDrafted,
    QueryRequested,
    QueryRouted,
    new_id,
)
from rag_evaluator.checks import assess
from rag_generator.drafting import Generator
from rag_generator.scoring import embedding_scorer
from rag_generator.settings import GeneratorSettings
from rag_retriever.search import Retriever
from rag_retriever.settings import RetrieverSettings
from rag_router.routing import decide
from rag_router.settings import RouterSettings
from rag_scorecard.stats import median, paired_differences, summarize

PATHS = ("inprocess", "nats", "http")
STAGES = ("router", "retriever", "generator", "evaluator")
GREETING = "hello"  # answered by the router alone: two JetStream hops and no retrieval


def cpu_seconds() -> float:
    """CPU time of this process, every thread (the services, not the separate nats-server)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class InProcessPipeline:
    """The four stages as plain calls: no broker, no serialisation, no thread hop."""

    def __init__(self, nats_url: str, data_dir: Path, model_dir: Path, qdrant_path: Path) -> None:
        common: dict[str, Any] = {"nats_url": nats_url, "data_dir": data_dir}
        self.router_settings = RouterSettings(**common)
        retriever_settings = RetrieverSettings(**common, model_dir=model_dir, qdrant_path=qdrant_path)
        embedder = get_embedder(retriever_settings.resolved_model_dir)
        store = configured_store(retriever_settings)
        self.embedder = embedder
        self.retriever = Retriever(retriever_settings, embedder, store)
        generator_settings = GeneratorSettings(**common)
        self.generator = Generator(generator_settings, None, setup_telemetry("bench"), on_delta=self._drop)
        # as the running generator ranks sentences (the bench turns its cache off)
        self.generator.scorer = embedding_scorer(embedder, generator_settings.sentence_cache_size)
        self.stage_ms: dict[str, list[float]] = {s: [] for s in STAGES}
        self.last_stage_ms: dict[str, float] = {}  # the last answer's stages, as the services' timings_ms

    @staticmethod
    async def _drop(query: object, delta: AnswerDelta) -> None:
        return None

    async def answer(self, question: str) -> QueryAnswered:
        query = Query(request_id=new_id(), gateway_id="inprocess", question=question, stream=False)
        marks = [time.perf_counter()]
        decision = decide(query, self.router_settings)
        marks.append(time.perf_counter())
        if isinstance(decision, QueryDrafted):  # a greeting: no retrieval, no generation
            drafted = decision
        else:
            retrieved = self.retriever.retrieve(decision)
            marks.append(time.perf_counter())
            drafted = await self.generator.draft(retrieved)
            marks.append(time.perf_counter())
        answer = QueryAnswered.of(drafted, assess(drafted))
        marks.append(time.perf_counter())
        stages = STAGES if len(marks) == 5 else ("router", "evaluator")
        self.last_stage_ms = {}
        for stage, start, end in zip(stages, marks[:-1], marks[1:], strict=True):
            self.stage_ms[stage].append((end - start) * 1000)
            self.last_stage_ms[stage] = (end - start) * 1000
        return answer

    def retrieval_ms(self, questions: list[str], repeats: int, max_seconds: float) -> tuple[list[float], list[float]]:
        """``Retriever.retrieve`` alone on each question (query embedding, hybrid search, context;
        no answer), ``repeats`` times or until ``max_seconds``; and, before each, the query
        embedding alone (dense + BM25), the part of it the model takes."""
        queries = [Query(request_id=new_id(), gateway_id="inprocess", question=q) for q in questions]
        asked = [r for r in (decide(q, self.router_settings) for q in queries) if isinstance(r, QueryRouted)]
        retrieval: list[float] = []
        embedding: list[float] = []
        deadline = time.monotonic() + max_seconds
        for routed_query in [r for _ in range(repeats) for r in asked]:
            if time.monotonic() > deadline:
                break
            started = time.perf_counter()
            self.embedder.embed_query(routed_query.query.question)
            embedded = time.perf_counter()
            self.retriever.retrieve(routed_query)
            embedding.append((embedded - started) * 1000)
            retrieval.append((time.perf_counter() - embedded) * 1000)
        return retrieval, embedding

    def embed_query_ms(self, questions: list[str]) -> list[float]:
        """The query embedding alone (dense + BM25), the first half of the retriever's work."""
        times = []
        for question in questions:
            started = time.perf_counter()
            self.embedder.embed_query(question)
            times.append((time.perf_counter() - started) * 1000)
        return times


class NatsClient:
    """Asks over JetStream as the gateway does, and waits on its own answer subject."""

    def __init__(self, nc: NATS) -> None:
        self.nc = nc
        self.js = nc.jetstream()
        self.gateway_id = "bench" + new_id()[:8]
        self.waiting: dict[str, asyncio.Future[QueryAnswered]] = {}

    async def on_message(self, msg: Msg) -> None:
        request_id, kind = msg.subject.split(".")[-2:]
        future = self.waiting.get(request_id)
        if future is None or future.done():
            return
        if kind == "final":
            future.set_result(QueryAnswered.model_validate_json(msg.data))
        elif kind == "error":
            error = AnswerError.model_validate_json(msg.data)
            future.set_exception(RuntimeError(f"{error.code}: {error.message}"))

    async def answer(self, question: str, timeout_s: float) -> QueryAnswered:
        rid = new_id()
        future: asyncio.Future[QueryAnswered] = asyncio.get_running_loop().create_future()
        self.waiting[rid] = future
        try:
            # As the gateway asks for POST /v1/query: the final answer alone, no token deltas.
            query = Query(request_id=rid, gateway_id=self.gateway_id, question=question, stream=False)
            message = QueryRequested(query=query)
            await self.js.publish(
                subjects.QUERY_REQUESTED,
                message.model_dump_json().encode(),
                stream=subjects.QUERY_STREAM,
                headers={"Nats-Msg-Id": f"{rid}:requested"},
            )
            return await asyncio.wait_for(future, timeout_s)
        finally:
            self.waiting.pop(rid, None)


@contextlib.asynccontextmanager
async def nats_client(url: str) -> AsyncIterator[NatsClient]:
    nc = await nats.connect(url, allow_reconnect=False)
    client = NatsClient(nc)
    try:
        await nc.subscribe(subjects.answer_wildcard(client.gateway_id), cb=client.on_message)
        yield client
    finally:
        await nc.drain()


@dataclass
class OverheadRun:
    ms: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PATHS})
    cpu_ms: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PATHS})
    greeting_ms: dict[str, list[float]] = field(default_factory=lambda: {"inprocess": [], "nats": []})
    greeting_cpu_ms: dict[str, list[float]] = field(default_factory=lambda: {"inprocess": [], "nats": []})
    inprocess_stage_ms: dict[str, dict[str, float | int]] = field(default_factory=dict)
    # Per question, the four stages' own work summed: timed around the same calls in-process, and as
    # the running services report it in the answer's timings_ms over NATS (what the split below uses).
    work_ms: dict[str, list[float]] = field(default_factory=lambda: {"inprocess": [], "nats": []})
    nats_stage_ms: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in STAGES})
    embed_query_ms: list[float] = field(default_factory=list)
    same_answer: int = 0
    compared: int = 0
    stopped_by: str = "count"

    def greeting_nats_minus_inprocess(self) -> list[float]:
        return paired_differences(self.greeting_ms["nats"], self.greeting_ms["inprocess"])

    def nats_minus_inprocess(self) -> list[float]:
        return paired_differences(self.ms["nats"], self.ms["inprocess"])

    def http_minus_inprocess(self) -> list[float]:
        return paired_differences(self.ms["http"], self.ms["inprocess"])

    def work_nats_minus_inprocess(self) -> list[float]:
        """Per question: how much longer the stages' own work took in the services than in-process."""
        return paired_differences(self.work_ms["nats"], self.work_ms["inprocess"])

    def moving_nats_minus_inprocess(self) -> list[float]:
        """Per question: the rest of the NATS overhead, moving the question between the stages
        (deliveries, acks, validation and encoding, the trace context, the publish calls)."""
        return paired_differences(self.nats_minus_inprocess(), self.work_nats_minus_inprocess())

    def to_json(self) -> dict[str, Any]:
        return {
            "questions_asked": len(self.ms["inprocess"]),
            "stopped_by": self.stopped_by,
            "same_answer_text": f"{self.same_answer}/{self.compared}",
            **{f"{p}_ms": summarize(v) for p, v in self.ms.items()},
            "nats_minus_inprocess_ms": summarize(self.nats_minus_inprocess()),
            "http_minus_inprocess_ms": summarize(self.http_minus_inprocess()),
            "process_cpu_ms_per_question": {p: summarize(v) for p, v in self.cpu_ms.items()},
            "greeting_ms": {p: summarize(v) for p, v in self.greeting_ms.items()},
            "greeting_nats_minus_inprocess_ms": summarize(self.greeting_nats_minus_inprocess()),
            "greeting_process_cpu_ms": {p: summarize(v) for p, v in self.greeting_cpu_ms.items()},
            "inprocess_stage_ms": self.inprocess_stage_ms,
            "nats_stage_ms": {stage: summarize(v) for stage, v in self.nats_stage_ms.items()},
            "work_ms": {p: summarize(v) for p, v in self.work_ms.items()},
            "work_nats_minus_inprocess_ms": summarize(self.work_nats_minus_inprocess()),
            "moving_nats_minus_inprocess_ms": summarize(self.moving_nats_minus_inprocess()),
            "embed_query_ms": summarize(self.embed_query_ms),
        }


async def _timed(call: Callable[[str], Awaitable[str]], question: str) -> tuple[float, float, str]:
    """Wall and process-CPU milliseconds of one call, and its answer text."""
    cpu, started = cpu_seconds(), time.perf_counter()
    answer = await call(question)
    return (time.perf_counter() - started) * 1000, (cpu_seconds() - cpu) * 1000, answer


async def measure_overhead(
    pipeline: InProcessPipeline,
    base_url: str,
    nats_url: str,
    questions: list[str],
    repeats: int,
    max_seconds: float,
    warmup: int = 3,
    greetings: int = 30,
    timeout_s: float = 30.0,
) -> OverheadRun:
    """Each question ``repeats`` times on each path, the paths' order rotating; bounded by ``max_seconds``.

    Then ``greetings`` greetings in-process and over NATS (what two hops cost with no retrieval),
    and the query embedding alone on each question (part of the retriever's time).
    """
    run = OverheadRun()
    async with nats_client(nats_url) as bus, httpx.AsyncClient(base_url=base_url, timeout=timeout_s) as http:

        async def via_http(question: str) -> str:
            response = await http.post("/v1/query", json={"question": question})
            response.raise_for_status()
            return str(response.json()["answer"])

        stages: dict[str, dict[str, float]] = {}  # each path's last answer's stage times

        async def via_nats(question: str) -> str:
            answer = await bus.answer(question, timeout_s)
            stages["nats"] = {s: answer.timings_ms[s] for s in STAGES if s in answer.timings_ms}
            return answer.draft.answer

        async def in_process(question: str) -> str:
            answer = await pipeline.answer(question)
            stages["inprocess"] = pipeline.last_stage_ms
            return answer.draft.answer

        paths: dict[str, Callable[[str], Awaitable[str]]] = {
            "inprocess": in_process,
            "nats": via_nats,
            "http": via_http,
        }
        for i in range(warmup):
            for call in paths.values():
                await call(questions[i % len(questions)])
        for stage_times in pipeline.stage_ms.values():
            stage_times.clear()
        deadline = time.monotonic() + max_seconds
        for turn, question in enumerate([q for _ in range(repeats) for q in questions]):
            if time.monotonic() > deadline:
                run.stopped_by = "time"
                break
            order = PATHS[turn % 3 :] + PATHS[: turn % 3]
            answers: dict[str, str] = {}
            for path in order:
                ms, cpu_ms, answers[path] = await _timed(paths[path], question)
                run.ms[path].append(ms)
                run.cpu_ms[path].append(cpu_ms)
            for path in run.work_ms:
                run.work_ms[path].append(sum(stages[path].values()))
            for stage in STAGES:
                run.nats_stage_ms[stage].append(stages["nats"].get(stage, 0.0))
            run.compared += 1
            run.same_answer += answers["inprocess"] == answers["nats"] == answers["http"]
        run.inprocess_stage_ms = {stage: summarize(v) for stage, v in pipeline.stage_ms.items()}
        deadline = time.monotonic() + max_seconds / 3
        for i in range(greetings):
            if time.monotonic() > deadline:
                break
            for path in ("inprocess", "nats") if i % 2 else ("nats", "inprocess"):
                ms, cpu_ms, _ = await _timed(paths[path], GREETING)
                run.greeting_ms[path].append(ms)
                run.greeting_cpu_ms[path].append(cpu_ms)
        run.embed_query_ms = await asyncio.to_thread(pipeline.embed_query_ms, questions)
    return run


def headline(run: OverheadRun) -> dict[str, float]:
    diffs = run.nats_minus_inprocess()
    return {
        "paired_p50": median(diffs),
        "inprocess_p50": median(run.ms["inprocess"]),
        "nats_p50": median(run.ms["nats"]),
        "http_p50": median(run.ms["http"]),
        "http_paired_p50": median(run.http_minus_inprocess()),
        "greeting_paired_p50": median(run.greeting_nats_minus_inprocess()),
        "cpu_paired_p50": median(paired_differences(run.cpu_ms["nats"], run.cpu_ms["inprocess"])),
        "work_paired_p50": median(run.work_nats_minus_inprocess()),
        "moving_paired_p50": median(run.moving_nats_minus_inprocess()),
    }
