"""Consuming: how every durable consumer takes a message, runs it, and settles it.

A subscriber is the handler itself, typed with its message model: FastStream decodes and validates
the body against that type (and documents it in the AsyncAPI document). The error policy wraps it
once, as a FastStream middleware on the work queue's router: a message that does not validate, or
fails permanently, is dead-lettered at once; any other failure is retried with backoff up to
``max_deliver`` times, then dead-lettered. Dead letters keep the original payload, so they can be
replayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from faststream import AckPolicy, BaseMiddleware, ContextRepo, StreamMessage
from faststream.nats import JStream, NatsBroker, NatsMessage, NatsRouter, PullSub
from nats.aio.msg import Msg
from nats.errors import NotJSMessageError
from pydantic import BaseModel, ValidationError

from rag_common.config.settings import ServiceSettings
from rag_common.transport.recovery import ConsumerSpec, layout_of
from rag_common.transport.streams import QUERY_JSTREAM, consumer_config
from rag_common.transport.telemetry import ServiceTelemetry
from rag_common.wire import subjects
from rag_common.wire.messages import AnswerError, DeadLetter, QueryRequested, StageMessage

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)
Q = TypeVar("Q", bound=QueryRequested | StageMessage)

RETRY_BACKOFF_S = (0.5, 2.0, 5.0, 15.0)


class PermanentError(Exception):
    """A failure that retrying cannot fix (bad input, unknown collection): no redelivery.

    ``dead_letter`` False: the message is sound and the failure is the answer (a question to a
    collection that has no index yet gets 404), so it is reported to the client but neither
    dead-lettered nor counted as an error.
    """

    def __init__(self, code: str, message: str, status: int = 400, *, dead_letter: bool = True) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.dead_letter = dead_letter


# A dead letter keeps at most this much of the failed message (docs/LIMITS.md): ten questions
# with ~580 KB of history each added 6 MB to RAG_DLQ in 4 s when whole payloads were kept.
DLQ_PAYLOAD_MAX_BYTES = 16 * 1024
DLQ_ERROR_MAX_BYTES = 2 * 1024
PAYLOAD_CUT_MARK = "…[cut: "

FailureHook = Callable[[dict[str, Any], str, str, int], Awaitable[None]]


class Delivery(Protocol):
    """One JetStream message as the error policy handles it (FastStream's ``NatsMessage`` is one)."""

    @property
    def raw_message(self) -> Msg:
        """The NATS message, for its subject and its JetStream delivery count."""

    @property
    def body(self) -> bytes:
        """The payload as it arrived, validated by the policy (and kept whole in a dead letter)."""

    async def ack(self) -> None:
        """Done: JetStream will not deliver it again."""

    async def nack(self, delay: float | None = None) -> None:
        """Not done: deliver it again after ``delay`` seconds (to any replica)."""

    async def reject(self) -> None:
        """Never deliver it again (dead-lettered, or answered as a failure)."""

    async def in_progress(self) -> None:
        """Still working on it: wait another ``ack_wait`` before delivering it elsewhere."""


def _deliveries(msg: Delivery) -> int:
    """How many times JetStream has delivered this message (1 for a core-NATS or test message)."""
    try:
        return int(msg.raw_message.metadata.num_delivered)
    except NotJSMessageError:
        return 1


def _raw_fields(body: bytes) -> dict[str, Any]:
    """Best-effort fields of a message that failed validation, to tell its sender what happened."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


class HandlerFailed(Exception):
    """The handler's own failure, raised after its message validated.

    It carries the message, so the error policy can tell it from a body FastStream could not
    decode or validate.
    """

    def __init__(self, error: Exception, payload: BaseModel) -> None:
        super().__init__(repr(error))
        self.error = error
        self.payload = payload


def message_type(work: Callable[..., Awaitable[None]]) -> type[BaseModel]:
    """The message model a handler takes: the annotation of its one parameter."""
    parameters = list(inspect.signature(work, eval_str=True).parameters.values())
    model = parameters[0].annotation if len(parameters) == 1 else None
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"{work.__qualname__} must take one parameter typed with its message model")
    return model


def subscriber_of(work: Callable[[M], Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    """``work`` as FastStream subscribes it, its own failures raised as ``HandlerFailed``.

    Same signature and docstring, so FastStream validates and documents its message type.
    """

    @functools.wraps(work)
    async def handle(*args: Any, **kwargs: Any) -> None:
        try:
            await work(*args, **kwargs)
        except Exception as exc:
            raise HandlerFailed(exc, (*args, *kwargs.values())[0]) from exc

    return handle


def _invalid(model: type[BaseModel], exc: Exception) -> str:
    """What was wrong with a body that did not validate, for the dead letter and the client."""
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False, include_input=False)[:3]
        for error in errors:  # FastStream validates the handler's arguments: drop the parameter's name
            error["loc"] = error["loc"][1:]
        return f"invalid {model.__name__} message: {errors}"
    return f"invalid {model.__name__} message: {type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class ErrorPolicy:
    """One work queue's error policy, as the FastStream middleware around each of its messages.

    Given to the queue's own router, so it wraps that subscriber only.
    """

    broker: NatsBroker
    telemetry: ServiceTelemetry
    model: type[BaseModel]  # what the handler takes, for the error of a body that is not one
    stage: str
    area: str
    max_deliver: int
    on_failure: FailureHook
    heartbeat_s: float | None = None

    def __call__(self, msg: Any, /, *, context: ContextRepo) -> BaseMiddleware:
        """The middleware around one message."""
        return _Settle(msg, context=context, policy=self)

    async def process_message(self, msg: Delivery, handle: Callable[[Any], Awaitable[Any]]) -> None:
        """Run one JetStream message through its handler and settle it; nothing that fails is lost.

        ``handle`` is FastStream's call: decode the body, validate it as ``model``, call the handler.

        - a body that does not decode or validate is dead-lettered at once (retrying cannot fix it);
        - a ``PermanentError`` is reported to ``on_failure`` and dead-lettered at once;
        - any other error is retried with backoff; after ``max_deliver`` attempts it is reported and
          dead-lettered. Dead letters keep the original payload so they can be replayed.

        While the work runs, JetStream is told every ``heartbeat_s`` that the message is in progress,
        so a slow message (a long document, a slow model) is not redelivered to a second worker
        while a dead worker's message still is, after the consumer's ack wait.
        """
        try:
            with _in_progress(msg, self.heartbeat_s):
                await handle(msg)
        except asyncio.CancelledError:
            # Shut down mid-message (drain timeout): hand it back now instead of after ack_wait.
            await asyncio.shield(msg.nack())
            raise
        except HandlerFailed as failed:
            await self._failed(msg, failed.error, failed.payload.model_dump())
        except Exception as exc:  # FastStream could not decode the body or validate it as ``model``
            error = _invalid(self.model, exc)
            await _dead_letter(msg, self.broker, self.area, self.stage, error, _deliveries(msg))
            await self.on_failure(_raw_fields(msg.body), "invalid_message", error, 400)
            self._count("rejected", error="invalid_message", letter="invalid_message")
            await msg.reject()
        else:
            self._count("ok")
            await msg.ack()

    async def _failed(self, msg: Delivery, exc: Exception, fields: dict[str, Any]) -> None:
        """A valid message whose handler failed: answered, dead-lettered at once, or retried."""
        stage = self.stage
        if isinstance(exc, PermanentError):
            if exc.dead_letter:
                await _dead_letter(msg, self.broker, self.area, stage, f"{exc.code}: {exc.message}", _deliveries(msg))
                log.warning("%s rejected %s: %s", stage, exc.code, exc.message)
                self._count("rejected", error="permanent", letter="permanent")
            else:  # the message is sound and the failure is the answer
                log.info("%s answered %s: %s", stage, exc.code, exc.message)
                self._count("rejected")
            await self.on_failure(fields, exc.code, exc.message, exc.status)
            await msg.reject()
            return
        self._count(None, error="transient")
        deliveries = _deliveries(msg)  # read from the reply subject only when a message fails
        if deliveries < self.max_deliver:
            log.warning("%s failed (attempt %d/%d), will retry: %r", stage, deliveries, self.max_deliver, exc)
            self._count("retry")
            await msg.nack(delay=RETRY_BACKOFF_S[min(deliveries - 1, len(RETRY_BACKOFF_S) - 1)])
            return
        log.error("%s failed after %d attempts; dead-lettered", stage, deliveries, exc_info=exc)
        error = f"{type(exc).__name__}: {exc}"
        await _dead_letter(msg, self.broker, self.area, stage, error, deliveries)
        await self.on_failure(fields, "stage_failed", f"{stage} failed: {error}", 503)
        self._count("dead_letter", letter="exhausted")
        await msg.reject()

    def _count(self, outcome: str | None, *, error: str | None = None, letter: str | None = None) -> None:
        """The message's outcome, error kind and dead-letter reason in the service's counters."""
        telemetry, service = self.telemetry, self.telemetry.service
        if outcome:
            telemetry.messages.labels(service, self.stage, outcome).inc()
        if error:
            telemetry.errors.labels(service, self.stage, error).inc()
        if letter:
            telemetry.dead_letters.labels(service, self.stage, letter).inc()


class _Settle(BaseMiddleware):
    def __init__(self, msg: Any, /, *, context: ContextRepo, policy: ErrorPolicy) -> None:
        super().__init__(msg, context=context)
        self.policy = policy

    async def consume_scope(self, call_next: Callable[[Any], Awaitable[Any]], msg: StreamMessage[Any]) -> Any:
        await self.policy.process_message(cast("NatsMessage", msg), call_next)


@contextlib.contextmanager
def _in_progress(msg: Delivery, every_s: float | None) -> Iterator[None]:
    """Extend the message's ack wait every ``every_s`` seconds while the block runs.

    A timer, not a task per message: almost every message is settled long before its first beat,
    and a task created and cancelled per message was a measurable share of a query hop's CPU.
    """
    if not every_s:
        yield
        return
    loop = asyncio.get_running_loop()
    sending: set[asyncio.Task[None]] = set()
    timer: list[asyncio.TimerHandle] = []

    def beat() -> None:
        task = loop.create_task(_send_in_progress(msg))
        sending.add(task)
        task.add_done_callback(sending.discard)
        timer[0] = loop.call_later(every_s, beat)

    timer.append(loop.call_later(every_s, beat))
    try:
        yield
    finally:
        timer[0].cancel()
        for task in sending:
            task.cancel()


async def _send_in_progress(msg: Delivery) -> None:
    try:
        await msg.in_progress()
    except Exception as exc:  # NATS away for a moment: the next beat tries again
        log.debug("in-progress for %s not sent: %r", msg.raw_message.subject, exc)


def answer_failure_hook(broker: NatsBroker) -> FailureHook:
    """Tell the waiting gateway replica that its request failed, so the client gets an error now."""

    async def report(fields: dict[str, Any], code: str, message: str, status: int) -> None:
        query = fields.get("query")  # every query-path message carries the question as ``query``
        ids = query if isinstance(query, dict) else fields
        gateway_id, request_id = ids.get("gateway_id"), ids.get("request_id")
        if not (isinstance(gateway_id, str) and isinstance(request_id, str)):
            log.warning("cannot report %s to a gateway: message has no gateway_id/request_id", code)
            return
        error = AnswerError(request_id=request_id, code=code, message=message, status=status)
        await broker.publish(error, subjects.answer_subject(gateway_id, request_id, "error"))

    return report


def register_work_queue(
    broker: NatsBroker,
    settings: ServiceSettings,
    telemetry: ServiceTelemetry,
    *,
    subject: str,
    consumer: str,
    stream: JStream,
    area: str,
    work: Callable[[M], Awaitable[None]],
    ack_wait: float,
    on_failure: FailureHook,
    stage: str | None = None,
) -> None:
    """Consume ``subject`` into ``work`` through a durable pull consumer every replica shares.

    ``work`` takes one message, typed with its model. Replicas split the work; a message whose
    handler dies is redelivered to another replica after ``ack_wait``; each replica handles up to
    ``settings.concurrency`` messages at once. Fetches take one message at a time: nats-py's batch
    fetch waits for a full batch (up to its timeout) once the first message has arrived, which
    would add seconds to a lone question.
    """
    telemetry.declare_stage(stage or consumer)
    config = consumer_config(settings, ack_wait=ack_wait)
    layout = layout_of(broker)
    if layout is not None:
        layout.add_consumer(ConsumerSpec(stream=stream.name, durable=consumer, subject=subject, config=config))
    policy = ErrorPolicy(
        broker,
        telemetry,
        message_type(work),
        stage=stage or consumer,
        area=area,
        max_deliver=settings.max_deliver,
        on_failure=on_failure,
        heartbeat_s=ack_wait / 3,
    )
    queue = NatsRouter(middlewares=[policy])
    queue.subscriber(
        subject,
        durable=consumer,
        stream=stream,
        pull_sub=PullSub(batch_size=1, timeout=5.0),
        max_workers=settings.concurrency,
        config=config,
        ack_policy=AckPolicy.MANUAL,
    )(subscriber_of(work))
    broker.include_router(queue)


def register_query_stage(
    broker: NatsBroker,
    settings: ServiceSettings,
    telemetry: ServiceTelemetry,
    *,
    subject: str,
    consumer: str,
    work: Callable[[Q], Awaitable[None]],
    ack_wait: float | None = None,
) -> None:
    """A query stage: a work queue on ``RAG_QUERY`` whose failures reach the waiting client."""
    register_work_queue(
        broker,
        settings,
        telemetry,
        subject=subject,
        consumer=consumer,
        stream=QUERY_JSTREAM,
        area="query",
        work=work,
        ack_wait=ack_wait or settings.stage_ack_wait_s,
        on_failure=answer_failure_hook(broker),
    )


def letter_payload(body: bytes, limit: int = DLQ_PAYLOAD_MAX_BYTES) -> str:
    """The failed message's body as a dead letter keeps it.

    Whole up to ``limit`` bytes (then it can be replayed), else its first ``limit`` bytes and a
    note of the whole size.
    """
    if len(body) <= limit:
        return body.decode("utf-8", errors="replace")
    head = body[:limit].decode("utf-8", errors="ignore")  # never half a character at the cut
    return f"{head}{PAYLOAD_CUT_MARK}{len(body)} bytes in all]"


async def _dead_letter(msg: Delivery, broker: NatsBroker, area: str, stage: str, error: str, deliveries: int) -> None:
    raw = _raw_fields(msg.body)
    query = raw.get("query")  # query-path messages carry their ids in the question
    ids = query if isinstance(query, dict) else raw
    letter = DeadLetter(
        subject=msg.raw_message.subject,
        error=letter_payload(error.encode(), DLQ_ERROR_MAX_BYTES),
        payload=letter_payload(msg.body),
        request_id=str(ids.get("request_id", "")),
        deliveries=deliveries,
    )
    await broker.publish(letter, subjects.dlq_subject(area, stage), stream=subjects.DLQ_STREAM)
