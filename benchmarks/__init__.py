"""Speed, throughput and overhead benchmarks of the whole system (``make bench``).

Every benchmark starts what it needs (a private nats-server on 127.0.0.1, the services, the
gateway on a free port, a temporary data folder), bounds every request loop in count and time,
and stops everything it started. Results go to ``reports/bench.json``; see ``docs/BENCHMARKS.md``.
"""
