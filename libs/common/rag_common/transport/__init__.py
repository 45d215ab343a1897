"""The NATS transport and the process around a service, one module per job.

Domain code imports none of it.

- ``broker``: the broker factory (middlewares, security, reconnection);
- ``labels``: bounded metric labels and span names;
- ``streams``: stream layout, consumer configuration, declaring them;
- ``recovery``: keeping that layout in place across NATS restarts;
- ``consuming``: the error policy (retries, dead letters) and the work-queue subscribers;
- ``publishing``: handing a question to the next stage, token deltas;
- ``payload``: keeping a message under the server's payload limit;
- ``service``: ``create_service``, readiness pings and health;
- ``telemetry``: each service's tracer provider and Prometheus registry;
- ``runner``: one service as its own process (settings from the environment, drain on SIGTERM).

It imports ``config`` and ``wire`` only; the buckets it opens belong to ``rag_common.store``.
"""
