"""The regeneration loop of an assessment: a question the evaluator fails goes back to the retriever,
which finds it passages of another section, so the paper is not short because one section had
nothing to ask. In memory and, with the same bodies, on a real nats-server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rag_common.store.embedding import get_embedder
from rag_common.store.factory import configured_store
from rag_common.transport.streams import ASSESSMENT_JSTREAM
from rag_common.transport.telemetry import setup_telemetry
from rag_common.wire import subjects
from rag_common.wire.messages import IngestRequested, Passage
from rag_common.wire.messages.assessment import (
    Assessment,
    AssessmentDrafted,
    AssessmentItem,
    AssessmentRejected,
    AssessmentRetrieved,
    Blueprint,
    QuestionSpec,
)
from rag_evaluator.app import build_broker as build_evaluator
from rag_evaluator.settings import EvaluatorSettings
from rag_generator.questions import Pool, write_question
from rag_ingest.pipeline import index_document
from rag_ingest.settings import IngestSettings
from rag_retriever.app import build_broker as build_retriever
from rag_retriever.assessment import sections_of
from rag_retriever.search import Retriever
from rag_retriever.settings import RetrieverSettings
from tests.support.components import BrokerMode

pytestmark = pytest.mark.component

COLLECTION = "exam"
# "Install" is code only: nothing in it can be quoted, so no question can be written from it.
SDK = b"""# Orbitly SDK

## Install

```bash
pip install orbitly-sdk==2.4.1 --index-url https://pypi.example.com/simple --trusted-host pypi.example.com
export ORBITLY_TOKEN="$(orbitly auth print-token --workspace acme-prod --scope read,write)"
orbitly sync --workspace acme-prod --since 2024-01-01 --dry-run --verbose --output json
```

## Quotas

A workspace key is a secret that identifies one Orbitly workspace to the public API.
The API allows 500 requests per minute for each workspace key because shared clusters must stay fair.
"""


def job(seed: int = 1) -> Assessment:
    blueprint = Blueprint.model_validate({"collection": COLLECTION, "counts": {"short": 1}, "seed": seed})
    return Assessment(id="a1", request_id="r1", blueprint=blueprint)


async def indexed_retriever(model_dir: Path, tmp_path: Path, mode: BrokerMode) -> tuple[Retriever, RetrieverSettings]:
    embedder = await asyncio.to_thread(get_embedder, model_dir)
    ingest = IngestSettings(model_dir=model_dir, qdrant_path=tmp_path / "qdrant", metrics_port=0)
    store = configured_store(ingest)
    store.ensure_collection(COLLECTION)
    request = IngestRequested(
        request_id="seed", document_id="sdk.md", collection=COLLECTION, source="sdk.md", object_name="-",
        content_hash="sdk", size=len(SDK),
    )  # fmt: skip
    await asyncio.to_thread(index_document, request, SDK, embedder, store, ingest)
    settings = RetrieverSettings(metrics_port=0, model_dir=model_dir, qdrant_path=tmp_path / "qdrant", **mode.settings)
    return Retriever(settings, embedder, store), settings


async def test_a_question_whose_section_has_nothing_to_ask_is_written_again_from_another_section(
    mode: BrokerMode, model_dir: Path, tmp_path: Path
) -> None:
    retriever, settings = await indexed_retriever(model_dir, tmp_path, mode)
    chunks = retriever.store.scroll_chunks(COLLECTION, 100)
    [install] = [s for s in sections_of(chunks) if s.path[-1] == "Install"]
    spec = QuestionSpec(index=0, kind="short", topic=f"{install.source} > {install.heading}")
    own = [c for c in chunks if c.get("section") == "Install"]
    passages = [
        Passage(
            n=n,
            source="sdk.md",
            document_id="sdk.md",
            section="Install",
            chunk_index=int(c["chunk_index"]),
            text=str(c["text"]),
        )
        for n, c in enumerate(own, start=1)
    ]
    assert passages
    assert write_question(spec, passages, Pool(), seed=1) is None
    first = AssessmentItem(spec=spec, passages=passages)

    broker, _ = build_retriever(settings, setup_telemetry("retriever"), retriever)
    again: list[AssessmentRetrieved] = []

    @broker.subscriber(subjects.ASSESSMENT_RETRIEVED, stream=ASSESSMENT_JSTREAM, durable="probe", pull_sub=True)
    async def capture(msg: AssessmentRetrieved) -> None:
        again.append(msg)

    rejected = AssessmentRejected(assessment=job(), items=[first], round=2)
    async with mode.broker(broker) as br:
        await br.publish(rejected, subjects.ASSESSMENT_REJECTED, stream=subjects.ASSESSMENT_STREAM)
        await capture.wait_call(timeout=30)

    [message] = again
    assert message.round == 2
    [item] = message.items
    assert item.spec.topic.endswith("Quotas")
    assert item.spec.kind == "short"
    assert item.passages[0].section == "Quotas"  # the chunks used before rank after the unused ones
    question = write_question(item.spec, item.passages, Pool(), seed=1)
    assert question is not None
    assert "workspace key" in question.stem
    assert question.citations[0].section == "Quotas"


async def test_the_evaluator_sends_a_failed_question_back_to_the_retriever_for_other_passages(
    mode: BrokerMode,
) -> None:
    broker, _ = build_evaluator(EvaluatorSettings(metrics_port=0, **mode.settings), setup_telemetry("evaluator"))
    back: list[AssessmentRejected] = []

    @broker.subscriber(subjects.ASSESSMENT_REJECTED, stream=ASSESSMENT_JSTREAM, durable="probe", pull_sub=True)
    async def capture(msg: AssessmentRejected) -> None:
        back.append(msg)

    nothing_to_ask = AssessmentItem(spec=QuestionSpec(index=0, kind="short", topic="sdk.md > Orbitly SDK > Install"))
    drafted = AssessmentDrafted(assessment=job(), items=[nothing_to_ask], round=1)
    async with mode.broker(broker) as br:
        await br.publish(drafted, subjects.ASSESSMENT_DRAFTED, stream=subjects.ASSESSMENT_STREAM)
        await capture.wait_call(timeout=30)

    [message] = back
    assert message.round == 2
    assert [(i.spec.topic, i.question) for i in message.items] == [("sdk.md > Orbitly SDK > Install", None)]
