"""The NATS transport, one module per job; domain code imports none of it.

- ``broker``: the broker factory (middlewares, security, reconnection);
- ``labels``: bounded metric labels and span names;
- ``streams``: stream layout, consumer configuration, declaring them;
- ``recovery``: keeping that layout in place across NATS restarts;
- ``consuming``: the error policy (retries, dead letters) and the work-queue subscribers;
- ``publishing``: handing a question to the next stage, token deltas;
- ``payload``: keeping a message under the server's payload limit;
- ``buckets``: object store and key-value buckets;
- ``service``: ``create_service``, readiness pings and health.
"""
