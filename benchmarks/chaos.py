"""``make chaos``: kill each service and nats-server in turn with questions and uploads in flight.

The system runs as separate processes on a private nats-server, all on 127.0.0.1 with free ports:
``store`` (ingest and retriever, which share the embedded Qdrant folder), ``router``,
``generator``, ``evaluator`` and ``gateway``. While clients keep asking questions and uploading
documents, each process and then nats-server is killed with SIGKILL and started again. A client
retries a failed or timed-out request (as any client would) within a per-question budget.

Reported in ``reports/chaos.json``:

The answer cache is off (``"answer_cache": false`` in the report), so every answer is the
pipeline's, through the processes being killed; ``--cache`` (``make chaos CHAOS_ARGS=--cache``)
runs with it on, for the second figure, into ``reports/chaos-cache.json``.

- questions ``answered`` (``cached``: of those, answered from the answer cache) / ``lost``
  (never answered within the budget) / ``duplicated`` (a response carrying a request id already
  seen, i.e. an answer delivered twice or crossed) / ``wrong`` (answered from another
  document), plus the first-attempt failures by kind;
- documents ``accepted`` / ``lost`` (accepted but not indexed at the end) / ``mislabelled``
  (status hash or indexed text not the last accepted version).

Bounded: every wait has a deadline and the whole run stops after ``--budget-s`` (default 280 s).

``--cluster 3`` (``make chaos CLUSTER=3``) runs the system on three clustered nats-servers
instead, every stream and bucket at three replicas (``RAG_JS_REPLICAS=3``) and every service
given the three URLs. Under the same load: the leader of ``RAG_QUERY`` (from the JetStream API's
stream info) is killed with SIGKILL and started again, then each node in turn is restarted (a
rolling restart), each next step only once every stream is caught up on every node. The report
adds each stream's replica count; the run fails on anything lost, duplicated or wrong, or on a
stream below three replicas.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from rag_common.wire import subjects
from rag_common.wire.messages import Flag
from rag_devrun.natsserver import LocalNatsServer, NatsCluster
from rag_devrun.processes import PROCESSES, Cluster, free_port

ROOT = Path(__file__).resolve().parents[1]
MODEL_DIR = ROOT / "data" / "models" / "all-MiniLM-L6-v2-int8"
QUERY_TIMEOUT_S = 15.0
FACILITIES = 6


def fact(i: int, version: int = 0) -> bytes:
    hour = 6 + (i + version) % 12
    return f"# Facility {i}\n\nThe zircon facility number {i} opens at {hour} o'clock (revision {version}).\n".encode()


@dataclass
class Tally:
    answered: int = 0
    lost: int = 0
    wrong: int = 0
    duplicated: int = 0
    cached: int = 0  # answered from the answer cache (only with --cache), a share of answered
    first_attempt_failures: Counter[str] = field(default_factory=Counter)
    request_ids: set[str] = field(default_factory=set)
    accepted: dict[str, str] = field(default_factory=dict)  # source -> last accepted sha256
    upload_failures: Counter[str] = field(default_factory=Counter)
    wrong_examples: list[dict[str, Any]] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)


async def ask_until_answered(client: httpx.AsyncClient, tally: Tally, i: int, budget_s: float) -> None:
    deadline = time.monotonic() + budget_s
    first = True
    while time.monotonic() < deadline:
        try:
            response = await client.post(
                "/v1/query",
                json={"question": f"When does zircon facility number {i} open?", "filters": {"source": f"f{i}.md"}},
                timeout=QUERY_TIMEOUT_S + 5,
            )
            kind = str(response.status_code)
        except httpx.HTTPError as exc:
            response, kind = None, type(exc).__name__
        if response is not None and response.status_code == 200:
            body = response.json()
            rid = body.get("request_id", "")
            if rid in tally.request_ids:
                tally.duplicated += 1
            tally.request_ids.add(rid)
            passages = [p.get("text", "") for p in body.get("passages", [])]
            if passages and all(f"number {i} " in p for p in passages):
                tally.answered += 1
                tally.cached += bool(body.get("cached"))
            else:
                tally.wrong += 1
                if len(tally.wrong_examples) < 5:
                    tally.wrong_examples.append(
                        {
                            "facility": i,
                            "answer": body.get("answer", "")[:200],
                            "refused": (body.get("flag_details") or {}).get(Flag.REFUSED),
                            "passages": [p[:120] for p in passages],
                            "at_s": round(time.monotonic() - tally.started, 1),
                        }
                    )
            return
        if first:
            tally.first_attempt_failures[kind] += 1
            first = False
        await asyncio.sleep(0.5)
    tally.lost += 1


async def upload_until_accepted(client: httpx.AsyncClient, tally: Tally, i: int, version: int, budget_s: float) -> None:
    data = fact(i, version)
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        try:
            response = await client.post("/v1/documents", files={"file": (f"f{i}.md", data)}, timeout=30)
            if response.status_code == 202:
                tally.accepted[f"f{i}.md"] = hashlib.sha256(data).hexdigest()
                return
            tally.upload_failures[str(response.status_code)] += 1
        except httpx.HTTPError as exc:
            tally.upload_failures[type(exc).__name__] += 1
        await asyncio.sleep(0.5)


async def load(client: httpx.AsyncClient, tally: Tally, stop: asyncio.Event) -> None:
    """Questions from three clients and an upload every second, until ``stop``."""
    counter = 0

    async def asker(offset: int) -> None:
        nonlocal counter
        while not stop.is_set():
            counter += 1
            await ask_until_answered(client, tally, (counter + offset) % FACILITIES, budget_s=90)

    async def uploader() -> None:
        version = 0
        while not stop.is_set():
            version += 1
            await upload_until_accepted(client, tally, version % FACILITIES, version, budget_s=60)
            await asyncio.sleep(1.0)

    await asyncio.gather(asker(0), asker(1), asker(2), uploader())


async def wait_indexed(client: httpx.AsyncClient, tally: Tally, timeout_s: float) -> float:
    """Seconds until every accepted document is indexed with its last accepted version."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
            listed = (await client.get("/v1/documents", timeout=10)).json()["documents"]
            records = {r["source"]: r for r in listed}
            if all(
                records.get(s, {}).get("status") in ("indexed", "unchanged") and records[s]["content_hash"] == sha
                for s, sha in tally.accepted.items()
            ):
                return time.monotonic() - started
        await asyncio.sleep(0.2)
    raise RuntimeError(f"the first documents were not indexed within {timeout_s}s")


async def check_documents(client: httpx.AsyncClient, tally: Tally, timeout_s: float) -> dict[str, list[str]]:
    """Every accepted document ends indexed (or unchanged) with the last accepted version."""
    deadline = time.monotonic() + timeout_s
    lost: list[str] = []
    mislabelled: list[str] = []
    records: dict[str, dict[str, Any]] = {}
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError, ValueError):
            listed = (await client.get("/v1/documents", timeout=10)).json()["documents"]
            records = {r["source"]: r for r in listed}
            if all(records.get(s, {}).get("status") in ("indexed", "unchanged", "failed") for s in tally.accepted):
                break
        await asyncio.sleep(0.5)
    for source, sha in sorted(tally.accepted.items()):
        record = records.get(source)
        if not record or record["status"] not in ("indexed", "unchanged"):
            lost.append(f"{source}: {record['status'] if record else 'missing'}")
            continue
        if record["content_hash"] != sha or record["chunks"] < 1:
            mislabelled.append(f"{source}: status names another version or no chunks")
            continue
        i = int(source[1:-3])
        revision = next(v for v in range(10_000) if hashlib.sha256(fact(i, v)).hexdigest() == sha)
        response = await client.post(
            "/v1/query",
            json={"question": f"When does zircon facility number {i} open?", "filters": {"source": source}},
            timeout=QUERY_TIMEOUT_S + 5,
        )
        passages = [p["text"] for p in response.json().get("passages", [])] if response.status_code == 200 else []
        if not passages or not all(f"(revision {revision})" in p for p in passages):
            mislabelled.append(f"{source}: indexed text is not revision {revision}")
    return {"lost": lost, "mislabelled": mislabelled}


def chaos_env(cache: bool = False) -> dict[str, str]:
    """Every process's environment. The answer cache is off unless asked for: with it on, a
    repeated question never reaches the stages being killed, and the run measures the cache."""
    return {
        "RAG_ANSWER_CACHE": "true" if cache else "false",
        "RAG_MODEL_DIR": str(MODEL_DIR),
        "RAG_QUERY_TIMEOUT_S": str(QUERY_TIMEOUT_S),
        "RAG_JS_CHECK_INTERVAL_S": "1",
        "RAG_GATEWAY_GATEWAY_ID": "chaosgw",
        "HF_HUB_OFFLINE": "1",
    }


def report_of(
    started: float, tally: Tally, documents: dict[str, list[str]], events: list[dict[str, Any]], work: Path
) -> dict[str, Any]:
    return {
        "seconds": round(time.monotonic() - started, 1),
        "questions": {
            "answered": tally.answered,
            "lost": tally.lost,
            "duplicated": tally.duplicated,
            "wrong": tally.wrong,
            "cached": tally.cached,
            "first_attempt_failures": dict(tally.first_attempt_failures),
            "wrong_examples": tally.wrong_examples,
        },
        "documents": {
            "accepted": len(tally.accepted),
            "lost": len(documents["lost"]),
            "mislabelled": len(documents["mislabelled"]),
            "details": documents,
            "upload_retries": dict(tally.upload_failures),
        },
        "events": events,
        "logs": str(work / "logs"),
    }


async def run_cluster(args: argparse.Namespace) -> dict[str, Any]:
    """The cluster scenario: kill -9 the query stream's leader, then restart every node in turn."""
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="rag-chaos-cluster-"))
    nats = NatsCluster(work / "nats", size=args.cluster)
    await nats.start()
    env = {**chaos_env(args.cache), "RAG_JS_REPLICAS": str(args.cluster)}
    cluster = Cluster(work, nats.url, free_port(), env=env)
    events: list[dict[str, Any]] = []
    tally = Tally()
    replicas: dict[str, int] = {}
    try:
        cluster.start_all()
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{cluster.port}") as client:
            events.append(
                {"event": "started", "nats": nats.url, "ready_after_s": round(await cluster.wait_ready(180), 1)}
            )
            for i in range(FACILITIES):
                await upload_until_accepted(client, tally, i, 0, budget_s=30)
            events.append({"event": "corpus indexed", "after_s": round(await wait_indexed(client, tally, 120), 1)})
            replicas = await nats.wait_current(60)
            stop = asyncio.Event()
            loader = asyncio.create_task(load(client, tally, stop))
            await asyncio.sleep(args.settle_s)
            leader = await nats.stream_leader(subjects.QUERY_STREAM)
            node = nats.node(leader)
            node.kill()
            killed_at = time.monotonic()
            new_leader = await wait_new_leader(nats, subjects.QUERY_STREAM, leader, timeout_s=30)
            events.append(
                {
                    "event": "killed -9",
                    "target": f"{leader} (leader of {subjects.QUERY_STREAM})",
                    "new_leader": new_leader,
                    "new_leader_after_s": round(time.monotonic() - killed_at, 1),
                }
            )
            await asyncio.sleep(args.settle_s)
            await asyncio.to_thread(node.start)
            events.append(
                {
                    "event": "restarted",
                    "target": leader,
                    "current_after_s": round(await timed(nats.wait_current(90)), 1),
                }
            )
            for node in nats.nodes:
                await asyncio.sleep(args.settle_s)
                node.stop()
                await asyncio.to_thread(node.start)
                current = await timed(nats.wait_current(90))
                events.append(
                    {"event": "rolling restart", "target": node.server_name, "current_after_s": round(current, 1)}
                )
            await asyncio.sleep(args.settle_s)
            stop.set()
            await asyncio.wait_for(loader, timeout=120)
            documents = await check_documents(client, tally, timeout_s=90)
            replicas = await nats.wait_current(60)
    finally:
        cluster.stop_all()
        nats.stop()
    report = report_of(started, tally, documents, events, work)
    report["streams"] = {"replicas": replicas, "below": sorted(s for s, n in replicas.items() if n < args.cluster)}
    return report


async def timed(wait: Any) -> float:
    started = time.monotonic()
    await wait
    return time.monotonic() - started


async def wait_new_leader(nats: NatsCluster, stream: str, old: str, timeout_s: float) -> str:
    """The stream's next leader, once the survivors have elected one."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            leader = await nats.stream_leader(stream)
            if leader != old:
                return leader
        await asyncio.sleep(0.2)
    raise RuntimeError(f"no new leader of {stream} within {timeout_s:.0f}s")


def failed(report: dict[str, Any]) -> bool:
    """Anything lost, duplicated, wrong or mislabelled, or a stream below its replica count."""
    questions, documents = report["questions"], report["documents"]
    below = report.get("streams", {}).get("below")
    return bool(
        questions["lost"]
        or questions["duplicated"]
        or questions["wrong"]
        or documents["lost"]
        or documents["mislabelled"]
        or below
    )


def crash(nats: LocalNatsServer) -> int:
    """Kill nats-server with SIGKILL (no graceful shutdown), as the README and docs/FAULTS.md say."""
    return nats.kill()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="rag-chaos-"))
    nats = LocalNatsServer(work / "nats")
    nats.start()
    nats_port = int(nats.url.rsplit(":", 1)[1])
    nats.port = nats_port
    cluster = Cluster(work, nats.url, free_port(), env=chaos_env(args.cache))
    events: list[dict[str, Any]] = []
    tally = Tally()
    try:
        cluster.start_all()
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{cluster.port}") as client:
            events.append({"event": "started", "ready_after_s": round(await cluster.wait_ready(180), 1)})
            for i in range(FACILITIES):
                await upload_until_accepted(client, tally, i, 0, budget_s=30)
            # Questions start once the first revisions are indexed: asked earlier, "I don't have
            # that in the documents" is the true answer, and it was counted as wrong (docs/FAULTS.md).
            events.append({"event": "corpus indexed", "after_s": round(await wait_indexed(client, tally, 120), 1)})
            stop = asyncio.Event()
            loader = asyncio.create_task(load(client, tally, stop))
            for target in [*PROCESSES, "nats-server"]:
                if time.monotonic() - started > args.budget_s - 90:
                    events.append({"event": "skipped", "target": target, "reason": "time budget"})
                    continue
                await asyncio.sleep(args.settle_s)
                if target == "nats-server":
                    crash(nats)
                    await asyncio.sleep(1.0)
                    nats.start()
                else:
                    cluster.kill(target)
                    await asyncio.sleep(1.0)
                    cluster.start(target)
                ready = await cluster.wait_ready(120)
                events.append({"event": "killed", "target": target, "ready_again_after_s": round(ready + 1.0, 1)})
            await asyncio.sleep(args.settle_s)
            stop.set()
            await asyncio.wait_for(loader, timeout=120)
            documents = await check_documents(client, tally, timeout_s=90)
    finally:
        cluster.stop_all()
        nats.stop()
    return report_of(started, tally, documents, events, work)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget-s", type=float, default=280.0, help="stop killing after this long")
    parser.add_argument("--settle-s", type=float, default=6.0, help="load between kills")
    parser.add_argument("--out", help="the report (default reports/chaos.json; with --cache, reports/chaos-cache.json)")
    parser.add_argument(
        "--cluster", type=int, default=1, help="nats-servers: 1 (kill services and the server) or 3 (a cluster)"
    )
    parser.add_argument(
        "--cache", action="store_true", help="with the answer cache on (default off: every answer from the pipeline)"
    )
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = str(ROOT / "reports" / ("chaos-cache.json" if args.cache else "chaos.json"))
    return args


def main() -> None:
    args = parse_args()
    report = asyncio.run(run_cluster(args) if args.cluster > 1 else run(args))
    report["answer_cache"] = args.cache
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: report[k] for k in ("seconds", "answer_cache", "questions")}, indent=2))
    print(json.dumps({k: v for k, v in report["documents"].items() if k != "details"}, indent=2))
    if "streams" in report:
        print(json.dumps(report["streams"], indent=2))
        sys.exit(1 if failed(report) else 0)
    lost = report["questions"]["lost"] or report["documents"]["lost"] or report["documents"]["mislabelled"]
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
