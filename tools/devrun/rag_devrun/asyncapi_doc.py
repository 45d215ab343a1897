"""docs/asyncapi.json: FastStream's AsyncAPI document of every service's and the gateway's subscribers.

Each service's app is built as it starts (``create_app``) but never connected; FastStream documents
each subscriber from its handler: the subject, the message model the handler takes and its
docstring. The settings are the defaults, whatever the environment says, so the document is the
same on every machine.

    faststream docs gen --factory rag_devrun.asyncapi_doc:create_app --out docs/asyncapi.json
"""

from __future__ import annotations

from faststream import FastStream
from faststream.nats import NatsBroker
from faststream.specification import AsyncAPI

from rag_common.transport.telemetry import setup_telemetry
from rag_common.wire import subjects
from rag_evaluator.app import create_app as evaluator
from rag_evaluator.settings import EvaluatorSettings
from rag_gateway.answers import AnswerHub
from rag_gateway.app import build_broker as gateway_broker
from rag_gateway.settings import GatewaySettings
from rag_generator.app import create_app as generator
from rag_generator.settings import GeneratorSettings
from rag_ingest.app import create_app as ingest
from rag_ingest.settings import IngestSettings
from rag_retriever.app import create_app as retriever
from rag_retriever.settings import RetrieverSettings
from rag_router.app import create_app as router
from rag_router.settings import RouterSettings

COMMAND = "faststream docs gen --factory rag_devrun.asyncapi_doc:create_app --out docs/asyncapi.json"
VERSION = "0.2.0"
SERVER = "nats://localhost:4222"


def brokers() -> list[NatsBroker]:
    """The brokers of the five services and the gateway, with their handlers subscribed."""
    apps = (
        ingest(IngestSettings.model_construct(nats_url=SERVER)),
        router(RouterSettings.model_construct(nats_url=SERVER)),
        retriever(RetrieverSettings.model_construct(nats_url=SERVER)),
        generator(GeneratorSettings.model_construct(nats_url=SERVER)),
        evaluator(EvaluatorSettings.model_construct(nats_url=SERVER)),
    )
    services = [app.broker for app in apps if isinstance(app.broker, NatsBroker)]
    gateway = GatewaySettings.model_construct(nats_url=SERVER, gateway_id="{gateway_id}")
    return [*services, gateway_broker(gateway, setup_telemetry("gateway", settings=gateway), AnswerHub())]


def specification() -> AsyncAPI:
    """The AsyncAPI specification FastStream makes of those brokers."""
    return AsyncAPI(
        *brokers(),
        title="rag-nats messages",
        version=VERSION,
        description=(
            "What each service consumes, from its handlers. Streams: "
            f"{subjects.INGEST_STREAM} ({subjects.INGEST_SUBJECTS}), {subjects.QUERY_STREAM} "
            f"({subjects.QUERY_SUBJECTS}), {subjects.ASSESSMENT_STREAM} ({subjects.ASSESSMENT_SUBJECTS}), "
            f"{subjects.DLQ_STREAM} ({subjects.DLQ_SUBJECTS}), {subjects.AUDIT_STREAM} ({subjects.AUDIT_SUBJECTS}); "
            "answers and pings are core NATS. Every message has a versioned `type` and ignores unknown fields."
        ),
    )


def create_app() -> FastStream:
    """For ``faststream docs gen --factory rag_devrun.asyncapi_doc:create_app``."""
    spec = specification()
    return FastStream(spec.brokers[0], specification=spec)
