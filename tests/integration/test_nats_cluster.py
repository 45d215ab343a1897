"""A three-node NATS cluster: the query stream's leader killed with SIGKILL, then every node
restarted in turn, under a bounded load of questions and uploads (``make chaos CLUSTER=3``).

The system runs as one process per service on three clustered nats-servers (routes on
loopback), every service given the three URLs and every stream and bucket at three replicas.
"""

from __future__ import annotations

import argparse

import pytest

from benchmarks.chaos import run_cluster
from rag_common.wire import subjects

pytestmark = [pytest.mark.integration, pytest.mark.cluster]


async def test_a_killed_leader_and_a_rolling_restart_lose_duplicate_and_mix_up_nothing() -> None:
    report = await run_cluster(argparse.Namespace(cluster=3, settle_s=4.0, cache=False))

    questions, documents = report["questions"], report["documents"]
    assert questions["answered"] > 0
    assert documents["accepted"] > 0
    assert (questions["lost"], questions["duplicated"], questions["wrong"]) == (0, 0, 0), questions
    assert (documents["lost"], documents["mislabelled"]) == (0, 0), documents["details"]
    replicas = report["streams"]["replicas"]
    kv = {f"KV_{name}" for name in (subjects.DOC_STATUS_BUCKET, subjects.SESSIONS_BUCKET, subjects.API_KEYS_BUCKET)}
    buckets = {*kv, f"OBJ_{subjects.DOCUMENTS_BUCKET}"}
    assert {subjects.INGEST_STREAM, subjects.QUERY_STREAM, subjects.DLQ_STREAM} | buckets <= replicas.keys()
    assert set(replicas.values()) == {3}, replicas
    events = [event["event"] for event in report["events"]]
    assert events.count("killed -9") == 1, report["events"]
    assert events.count("rolling restart") == 3, report["events"]
    killed = next(event for event in report["events"] if event["event"] == "killed -9")
    assert killed["new_leader"] not in killed["target"]
