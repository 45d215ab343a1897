"""Publishing along the query path: the next stage (JetStream, deduplicated) and token deltas.

Every message is encoded once and fitted under the server's payload limit (``transport.payload``)
and published through FastStream (trace context in the headers, publish metrics).
"""

from __future__ import annotations

from faststream.nats import NatsBroker

from rag_common.transport.payload import fitted_json, payload_limit
from rag_common.wire import subjects
from rag_common.wire.messages import AnswerDelta, Message, Query, QueryAnswered, StageMessage

# Bodies are encoded once, here (the size check needs the bytes anyway), and published as they are.
JSON = {"content-type": "application/json"}


async def publish_stage(broker: NatsBroker, message: StageMessage, subject: str) -> None:
    """Hand a question to the next stage; the message id makes a redelivered stage's repeat a no-op.

    Returns once JetStream has stored it (its PubAck), so the caller acknowledges its own message
    only after the next stage's is safe.
    """
    body = fitted_json(message, payload_limit(broker))
    headers = {"Nats-Msg-Id": f"{message.query.request_id}:{subject}", **JSON}
    await broker.publish(body, subject, stream=subjects.QUERY_STREAM, headers=headers)


async def publish_assessment(broker: NatsBroker, message: Message, subject: str, message_id: str) -> None:
    """Hand an assessment to its next stage; ``message_id`` makes a redelivered stage's repeat a no-op."""
    body = fitted_json(message, payload_limit(broker))
    headers = {"Nats-Msg-Id": message_id, **JSON}
    await broker.publish(body, subject, stream=subjects.ASSESSMENT_STREAM, headers=headers)


async def publish_delta(broker: NatsBroker, query: Query, delta: AnswerDelta) -> None:
    """A token delta goes straight to the connection: no span and no trace headers per token."""
    subject = subjects.answer_subject(query.gateway_id, query.request_id, "delta")
    await broker.connection.publish(subject, delta.model_dump_json().encode())


async def publish_answer(broker: NatsBroker, answered: QueryAnswered) -> None:
    """The final answer goes to the waiting gateway replica on core NATS, under the payload limit."""
    query = answered.query
    final = fitted_json(answered, payload_limit(broker))
    subject = subjects.answer_subject(query.gateway_id, query.request_id, "final")
    await broker.publish(final, subject, headers=JSON)
