"""Offline evaluation (L2): run a golden set through the whole system, as a user would.

``make eval DATASET=<dir>`` (``python -m rag_scorecard --dataset <dir>``) takes a folder with
``corpus/`` and ``questions.jsonl``, uploads the corpus through ``POST /v1/documents`` into a
collection of its own, asks every question through ``POST /v1/query`` and scores the answers with
the pure formulas of :mod:`rag_scorecard.metrics`. It never talks to NATS or Qdrant: what it measures
is exactly what an HTTP client gets. Results go to ``reports/eval-<dataset>.json`` and ``.md``;
``--fail-under metric=value`` turns the run into a gate (exit 1). See docs/EVALUATION.md.

It uses the system on http://127.0.0.1:8000 (``make run``) when one answers there, a deployment
given with ``--url``, or else starts the whole system in this process for the run.

One module per job: ``dataset`` (folders and questions.jsonl), ``metrics`` (the formulas),
``stats`` (percentiles, shared with the benchmarks), ``thresholds`` (``--fail-under``), ``client``
(asking over HTTP with bounded retries), ``report`` (JSON report), ``markdown`` (its summary),
``system`` (which system to evaluate, or starting one), ``run`` (one run end to end), ``cli``.
This package is offline tooling: no runtime service imports it.
"""
