"""The AsyncAPI document of every NATS subject and message, built from ``subjects`` and the models.

The services validate raw messages themselves (to dead-letter what does not parse), so their own
brokers carry no payload types. This module declares each subject once more, as a publisher (who
sends it) and a subscriber (who consumes it) typed with its message model, on a broker that never
connects. The names come from ``rag_common.wire.subjects``, the payloads from ``rag_common.wire.messages``.

    python -m rag_common.wire.asyncapi --out docs/asyncapi.json    # regenerate
    python -m rag_common.wire.asyncapi --check docs/asyncapi.json  # fail when it is stale
    faststream docs gen --factory rag_common.wire.asyncapi:create_app
"""

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faststream import FastStream
from faststream.nats import JStream, NatsBroker
from faststream.specification import AsyncAPI
from pydantic import BaseModel

from rag_common.wire import subjects
from rag_common.wire.messages import (
    AnswerDelta,
    AnswerError,
    AuditEvent,
    DeadLetter,
    DeleteRequested,
    IngestRequested,
    QueryAnswered,
    QueryDrafted,
    QueryRequested,
    QueryRetrieved,
    QueryRouted,
)
from rag_common.wire.messages.assessment import (
    AssessmentDrafted,
    AssessmentRejected,
    AssessmentRequested,
    AssessmentRetrieved,
)

VERSION = "0.1.0"
DEFAULT_OUT = Path("docs/asyncapi.json")


class PingRequest(BaseModel):
    """An empty request: any payload is ignored."""


class PingReply(BaseModel):
    """A live service's answer to a readiness ping (plus service-specific checks)."""

    service: str
    status: str = "ok"
    vector_store: str | None = None


@dataclass(frozen=True)
class Channel:
    """One subject of the system: the message on it, who publishes and who consumes it, and its stream."""

    subject: str
    model: type[BaseModel]
    producer: str
    consumer: str
    description: str
    stream: str | None = None


ANSWER = subjects.answer_subject("{gateway_id}", "{request_id}", "{kind}").rsplit(".", 1)[0]

CHANNELS: tuple[Channel, ...] = (
    Channel(
        subjects.INGEST_REQUESTED,
        IngestRequested,
        "gateway",
        "ingest",
        "Index an uploaded document; its bytes wait in the object store bucket "
        f"{subjects.DOCUMENTS_BUCKET!r}, its status in the key-value bucket {subjects.DOC_STATUS_BUCKET!r}.",
        subjects.INGEST_STREAM,
    ),
    Channel(
        subjects.INGEST_DELETE,
        DeleteRequested,
        "gateway",
        "ingest",
        "Remove a document's chunks and bytes.",
        subjects.INGEST_STREAM,
    ),
    Channel(
        subjects.QUERY_REQUESTED,
        QueryRequested,
        "gateway",
        "router",
        "A question (with the conversation's earlier turns), first stage of the query path.",
        subjects.QUERY_STREAM,
    ),
    Channel(
        subjects.QUERY_ROUTED,
        QueryRouted,
        "router",
        "retriever",
        "The question with its route: complexity score, signals, tier (or a canned greeting).",
        subjects.QUERY_STREAM,
    ),
    Channel(
        subjects.QUERY_RETRIEVED,
        QueryRetrieved,
        "retriever",
        "generator",
        "The question with its passages (or a refusal), after hybrid search and the relevance threshold.",
        subjects.QUERY_STREAM,
    ),
    Channel(
        subjects.QUERY_DRAFTED,
        QueryDrafted,
        "generator",
        "evaluator",
        "The drafted answer with its citations and usage.",
        subjects.QUERY_STREAM,
    ),
    Channel(
        subjects.ASSESSMENT_REQUESTED,
        AssessmentRequested,
        "gateway",
        "retriever",
        "An assessment blueprint; the job's state waits in the key-value bucket "
        f"{subjects.ASSESSMENTS_BUCKET!r}, which every stage updates.",
        subjects.ASSESSMENT_STREAM,
    ),
    Channel(
        subjects.ASSESSMENT_RETRIEVED,
        AssessmentRetrieved,
        "retriever",
        "generator",
        "Each question spec with its passages and foils for distractors (regeneration: the questions to write "
        "again, with other passages).",
        subjects.ASSESSMENT_STREAM,
    ),
    Channel(
        subjects.ASSESSMENT_DRAFTED,
        AssessmentDrafted,
        "generator",
        "evaluator",
        "Each question spec with its written question, to be validated.",
        subjects.ASSESSMENT_STREAM,
    ),
    Channel(
        subjects.ASSESSMENT_REJECTED,
        AssessmentRejected,
        "evaluator",
        "retriever",
        "The paper after the first check: the questions that failed go back once for passages of another "
        "section of their unit, then to the generator (regeneration). The gateway sends one question back "
        "the same way when a teacher asks for it to be written again (assessment.rewrite).",
        subjects.ASSESSMENT_STREAM,
    ),
    Channel(
        f"{ANSWER}.delta",
        AnswerDelta,
        "generator",
        "gateway",
        "A piece of answer text as it is generated (core NATS, to the asking gateway replica).",
    ),
    Channel(
        f"{ANSWER}.final",
        QueryAnswered,
        "evaluator",
        "gateway",
        "The final answer with its flags: the body of POST /v1/query (core NATS).",
    ),
    Channel(
        f"{ANSWER}.error",
        AnswerError,
        "query-stages",
        "gateway",
        "A question that cannot be answered; status is the HTTP status the client gets (core NATS).",
    ),
    Channel(
        subjects.dlq_subject("{area}", "{stage}"),
        DeadLetter,
        "services",
        "operators",
        "A message that failed validation, failed for good or exhausted its redeliveries, with its error.",
        subjects.DLQ_STREAM,
    ),
    Channel(
        subjects.audit_subject("{action}", "{actor}"),
        AuditEvent,
        "gateway",
        "operators",
        "Append-only audit log: keys created and revoked, documents uploaded and deleted, profiles set, "
        "requests refused (401, 403, 429, or 404 for what is not the caller's); read through GET /v1/audit.",
        subjects.AUDIT_STREAM,
    ),
    Channel(
        subjects.ping_subject("{service}"),
        PingRequest,
        "gateway",
        "services",
        "Request/reply readiness ping behind GET /readyz; each service answers with a PingReply.",
    ),
    Channel(
        subjects.ping_subject("{service}"),
        PingReply,
        "services",
        "gateway",
        "The reply to a readiness ping (sent to the request's reply inbox).",
    ),
)


def _typed_handler(model: type[BaseModel], reply: type[BaseModel] | None) -> Any:
    async def handle(message: Any) -> Any:  # never called: the broker never connects
        return None

    handle.__annotations__ = {"message": model, "return": reply}
    return handle


def build_broker() -> NatsBroker:
    """A broker declaring every subject with its payload; it is never started."""
    broker = NatsBroker("nats://127.0.0.1:4222", apply_types=True)
    for channel in CHANNELS:
        stream = JStream(channel.stream, declare=False) if channel.stream else None
        reply = PingReply if channel.model is PingRequest else None
        name = channel.model.__name__
        kwargs: dict[str, Any] = {"stream": stream} if stream else {}
        broker.subscriber(
            channel.subject,
            title=f"{channel.subject}:{channel.consumer}:{name}",
            description=f"{channel.consumer} consumes: {channel.description}",
            **kwargs,
        )(_typed_handler(channel.model, reply))
        broker.publisher(
            channel.subject,
            title=f"{channel.subject}:{channel.producer}:{name}",
            description=f"{channel.producer} publishes: {channel.description}",
            schema=channel.model,
            **kwargs,
        )
    return broker


def specification() -> AsyncAPI:
    """The AsyncAPI specification of every channel (``CHANNELS``), made from the message models."""
    return AsyncAPI(
        build_broker(),
        title="rag-nats messages",
        version=VERSION,
        description=(
            "Every NATS subject of the system and the message on it. Streams: "
            f"{subjects.INGEST_STREAM} ({subjects.INGEST_SUBJECTS}), {subjects.QUERY_STREAM} "
            f"({subjects.QUERY_SUBJECTS}), {subjects.ASSESSMENT_STREAM} ({subjects.ASSESSMENT_SUBJECTS}), "
            f"{subjects.DLQ_STREAM} ({subjects.DLQ_SUBJECTS}), "
            f"{subjects.AUDIT_STREAM} ({subjects.AUDIT_SUBJECTS}); answers and pings "
            "are core NATS. Every message has a versioned `type` and ignores unknown fields."
        ),
    )


def create_app() -> FastStream:
    """For ``faststream docs gen --factory rag_common.wire.asyncapi:create_app``."""
    spec = specification()
    return FastStream(spec.brokers[0], specification=spec)


def document() -> dict[str, Any]:
    """The specification as JSON-ready data."""
    jsonable: dict[str, Any] = specification().to_specification().to_jsonable()
    return jsonable


def render() -> str:
    """The document as checked in (``docs/asyncapi.json``): sorted keys, so a diff shows only what changed."""
    return json.dumps(document(), indent=2, sort_keys=True) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rag_common.wire.asyncapi``: write the document (``--out``) or check one (``--check``)."""
    parser = argparse.ArgumentParser(prog="python -m rag_common.wire.asyncapi", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help=f"write the document here (e.g. {DEFAULT_OUT})")
    parser.add_argument("--check", type=Path, help="exit 1 when this file differs from a fresh document")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not args.check.exists() or args.check.read_text() != text:
            print(f"{args.check} is stale: run python -m rag_common.wire.asyncapi --out {args.check}", file=sys.stderr)
            return 1
        return 0
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
