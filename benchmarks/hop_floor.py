"""What one hop costs with nothing of ours in it: ``python -m benchmarks.hop_floor``.

The floor under the pipeline-overhead figure, measured with nats-py alone on the same nats-server
and event loop as the services use:

- ``core_request``: a core NATS request and its reply (no stream, no acknowledgement);
- ``js_publish``: a JetStream publish that waits for its PubAck (what every stage does before it
  acknowledges its input);
- ``js_hop``: a JetStream publish (with its PubAck) until a pull consumer on another connection has
  the message and has acknowledged it: one stage-to-stage hop of the query path without FastStream,
  validation, telemetry or work.

A question takes five such hops (gateway → router → retriever → generator → evaluator) and a core
NATS message back to the gateway, so five ``js_hop`` is the least the NATS path can cost over the
same stages in-process, before any framework code runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import nats
import nats.errors
from nats.js.api import AckPolicy, ConsumerConfig, StorageType, StreamConfig

from benchmarks.system import private_nats
from rag_scorecard.stats import summarize

STREAM, SUBJECT, DURABLE = "BENCH_FLOOR", "bench.floor.hop", "bench-floor"


async def measure_floor(nats_url: str, count: int = 300, max_seconds: float = 20.0) -> dict[str, Any]:
    """Median and spread, in ms, of each kind of hop; bounded by ``count`` and ``max_seconds`` each."""
    publisher, consumer = await nats.connect(nats_url), await nats.connect(nats_url)
    try:
        js = publisher.jetstream()
        await js.add_stream(StreamConfig(name=STREAM, subjects=[SUBJECT], storage=StorageType.MEMORY))

        async def reply(msg: Any) -> None:
            await msg.respond(b"ok")

        subject = f"bench.floor.request.{uuid.uuid4().hex}"
        await consumer.subscribe(subject, cb=reply)
        await consumer.flush()
        await _until_answered(publisher, subject)
        core = await _timed(lambda: publisher.request(subject, b"q", timeout=5), count, max_seconds)
        publish = await _timed(lambda: js.publish(SUBJECT, b"q"), count, max_seconds)
        await js.purge_stream(STREAM)

        config = ConsumerConfig(durable_name=DURABLE, ack_policy=AckPolicy.EXPLICIT)
        pull = await consumer.jetstream().pull_subscribe(SUBJECT, durable=DURABLE, stream=STREAM, config=config)

        async def hop() -> None:
            received = asyncio.create_task(pull.fetch(1, timeout=5))
            await js.publish(SUBJECT, b"q")
            (msg,) = await received
            await msg.ack()

        hops = await _timed(hop, count, max_seconds)
        await js.delete_stream(STREAM)
    finally:
        await publisher.close()
        await consumer.close()
    return {"core_request": core, "js_publish": publish, "js_hop": hops}


async def _until_answered(nc: Any, subject: str, attempts: int = 100) -> None:
    """Wait (bounded) until the responder's interest has reached the publisher's side of the server."""
    for _ in range(attempts):
        try:
            await nc.request(subject, b"q", timeout=5)
            return
        except nats.errors.NoRespondersError:
            await asyncio.sleep(0.02)
    raise RuntimeError(f"no responder on {subject} after {attempts} attempts")


def hop_floors(floor: dict[str, Any], hops: int = 5) -> float:
    """The least a question's NATS path costs: ``hops`` bare JetStream hops and the core reply (p50s)."""
    return round(hops * float(floor["js_hop"]["p50"]) + float(floor["core_request"]["p50"]) / 2, 3)


async def _timed(call: Any, count: int, max_seconds: float) -> dict[str, float | int]:
    for _ in range(min(20, count)):  # warm-up
        await call()
    times: list[float] = []
    deadline = time.monotonic() + max_seconds
    while len(times) < count and time.monotonic() < deadline:
        started = time.perf_counter()
        await call()
        times.append((time.perf_counter() - started) * 1000)
    return summarize(times)


async def main(count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="rag-floor-") as tmp:
        async with private_nats(Path(tmp) / "nats") as server:
            floor = await measure_floor(server.url, count)
            return {**floor, "question_floor_ms": hop_floors(floor)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=500, help="hops of each kind (each bounded to 20 s)")
    print(json.dumps(asyncio.run(main(parser.parse_args().count)), indent=2))
