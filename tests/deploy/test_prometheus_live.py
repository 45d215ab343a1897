"""A real Prometheus (Debian's) scrapes a running system; every dashboard and alert expression is
evaluated through its HTTP API after a workload with one failure of each kind.

None may be invalid, and none may be empty: a panel or alert signal that has no data after its
failure happened is a panel that would stay blank (or an alert that would stay silent) in
production. Skips when the ``prometheus`` binary is missing (``make install`` installs it).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest
import yaml

from rag_common.wire import subjects
from rag_devrun.natsserver import LocalNatsServer
from rag_devrun.stack import Stack
from tests.support.fake_llm import FakeLLM
from tests.support.http import upload, upload_and_wait, wait_for_status
from tests.support.polling import eventually
from tests.support.system import stack_options

pytestmark = pytest.mark.deploy

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
SERVICES = ("ingest", "router", "retriever", "generator", "evaluator")
# Dashboards whose every expression must return data here. rag-infrastructure graphs the NATS
# exporter, a Qdrant server and the collector, which this test does not run: its expressions are
# checked for validity only.
MUST_HAVE_DATA = {"rag-overview.json"}
# Grafana widens $__rate_interval with the time range; 5m here keeps the workload's first queries
# in the window however long the dead-lettering part of the workload took on a loaded machine.
RATE_INTERVAL = "5m"
STRONG_QUESTION = (
    # Names the test's corpus holds: a name it never mentions would be refused before the model runs.
    "Compare the Pro plan and the Timeline view, explain why the price differs between the brochure and the "
    "pricing page, and summarise the trade-offs step by step?"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prometheus_config(workdir: Path, targets: dict[str, str]) -> Path:
    """The shipped prometheus.yml with its compose targets pointed at this test's ports.

    Jobs for what this test does not run (Qdrant, the NATS exporter, the collector) are dropped;
    rule groups are evaluated every second instead of every 15 s.
    """
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    config["global"].update(scrape_interval="1s", scrape_timeout="1s", evaluation_interval="1s")
    jobs = []
    for job in config["scrape_configs"]:
        mapped = [targets[t] for c in job["static_configs"] for t in c["targets"] if t in targets]
        if mapped:
            job["static_configs"] = [{"targets": mapped}]
            jobs.append(job)
    config["scrape_configs"] = jobs
    rules_dir = workdir / "rules"
    rules_dir.mkdir()
    for path in (DEPLOY / "prometheus" / "rules").glob("*.yml"):
        rules = yaml.safe_load(path.read_text())
        for group in rules["groups"]:
            group["interval"] = "1s"
        (rules_dir / path.name).write_text(yaml.safe_dump(rules))
    config["rule_files"] = [str(rules_dir / "*.yml")]
    path = workdir / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def launch_prometheus(binary: str, workdir: Path, config: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with open(workdir / "prometheus.log", "wb") as log:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=log,
        )
    return process, f"http://127.0.0.1:{port}"


async def start_prometheus(workdir: Path, config: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("prometheus")
    if not binary:
        pytest.skip("prometheus is not installed (make install: apt-get install prometheus)")
    process, url = await asyncio.to_thread(launch_prometheus, binary, workdir, config)
    deadline = time.monotonic() + 60
    async with httpx.AsyncClient() as client:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(workdir / 'prometheus.log').read_text()[-2000:]}")
            try:
                if (await client.get(url + "/-/ready")).status_code == 200:
                    return process, url
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "prometheus not ready within 60 s"
            await asyncio.sleep(0.1)


async def query(client: httpx.AsyncClient, url: str, expr: str) -> list[dict[str, Any]]:
    response = await client.get(url + "/api/v1/query", params={"query": expr})
    body = response.json()
    assert body["status"] == "success", f"{expr}: {body.get('error')}"
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


async def workload(client: httpx.AsyncClient, nats_url: str) -> None:
    """Successes, and one failure of each kind: rejected upload, unparsable document, invalid
    message, unknown collection (permanent), LLM outage (transient, retried, then dead-lettered)."""
    doc = b"# Plans\n\n## Pro\n\nOrbitly Pro costs $12 per user per month and includes the Timeline view.\n"
    assert (await upload_and_wait(client, "plans.md", doc))["status"] == "indexed"
    assert (await upload(client, "plans.md", doc)).status_code == 202  # unchanged
    extra = await upload_and_wait(client, "extra.md", b"# Extra\n\nThe heron count is 12.\n")
    assert (await client.delete(f"/v1/documents/{extra['document_id']}")).status_code == 202
    assert (await upload(client, "tool.exe", b"MZ")).status_code == 415
    broken = await upload(client, "broken.pdf", b"%PDF-1.4 this is not a pdf")
    assert (await wait_for_status(client, broken.json()["document_id"]))["status"] == "failed"

    assert (await client.post("/v1/query", json={"question": "What does Orbitly Pro cost?"})).status_code == 200
    stream = await client.post("/v1/query/stream", json={"question": "What does Orbitly Pro cost per user?"})
    assert "event: done" in stream.text
    assert (await client.post("/v1/query", json={"question": "hello"})).status_code == 200
    failed = await client.post("/v1/query", json={"question": STRONG_QUESTION})
    assert failed.status_code >= 500, failed.text
    unknown = await client.post("/v1/query", json={"question": "What does it cost?", "collection": "nope"})
    assert unknown.status_code == 404, unknown.text
    nc = await nats.connect(nats_url)
    try:
        await nc.jetstream().publish(subjects.QUERY_REQUESTED, b'{"not": "a query"}')
    finally:
        await nc.close()


@pytest.fixture
async def running(tmp_path: Path, nats_server: LocalNatsServer, model_dir: Path) -> AsyncIterator[tuple[str, str]]:
    ports = {name: free_port() for name in SERVICES}
    async with FakeLLM(failing_models=frozenset({"broken"})) as llm:
        options = stack_options(
            tmp_path,
            nats_server.url,
            model_dir,
            generator={
                "model_fast": "openai/fake-small",
                "model_strong": "openai/broken",
                "api_base": llm.base_url,
                "api_key": "test-key",
                "num_retries": 0,
                "timeout_s": 5,
                "max_deliver": 2,
            },
            gateway={"stats_interval_s": 1},
        )
        options.metrics = True
        for name, port in ports.items():
            options.overrides.setdefault(name, {})["metrics_port"] = port
        async with Stack(options) as stack:
            targets = {f"{name}:{9101 + i}": f"127.0.0.1:{ports[name]}" for i, name in enumerate(SERVICES)}
            targets["gateway:8000"] = stack.base_url.removeprefix("http://")
            process, url = await start_prometheus(tmp_path, prometheus_config(tmp_path, targets))
            try:
                await wait_for_first_scrapes(url, len(targets))
                async with httpx.AsyncClient(base_url=stack.base_url, timeout=60) as client:
                    await workload(client, nats_server.url)
                yield url, stack.base_url
            finally:
                process.terminate()
                await asyncio.to_thread(process.wait, 30)


async def wait_for_first_scrapes(url: str, targets: int) -> None:
    """Every target scraped at least twice, so the counters' 0 is recorded before any failure."""
    deadline = time.monotonic() + 60
    async with httpx.AsyncClient(timeout=10) as client:
        while True:
            scraped = await query(client, url, "count_over_time(up[1m]) >= 2")
            if len(scraped) >= targets:
                return
            assert time.monotonic() < deadline, f"only {len(scraped)} of {targets} targets scraped"
            await asyncio.sleep(0.2)


def dashboard_expressions() -> list[tuple[str, str, str]]:
    found = []
    for path in sorted((DEPLOY / "grafana" / "dashboards").glob("*.json")):
        for panel in json.loads(path.read_text())["panels"]:
            for target in panel.get("targets", []):
                expr = target["expr"].replace("$__rate_interval", RATE_INTERVAL)
                found.append((path.name, panel["title"], expr))
    return found


async def test_every_dashboard_and_alert_expression_has_data_after_a_failing_workload(
    running: tuple[str, str],
) -> None:
    url, _ = running
    async with httpx.AsyncClient(timeout=30) as client:
        # Wait until the failures are scraped and the rules have seen them (bounded).
        deadline = time.monotonic() + 60
        while True:
            letters = await query(client, url, "rag:dead_letters:increase10m > 0")
            reasons = {r["metric"]["reason"] for r in letters}
            if reasons >= {"invalid_message", "permanent", "exhausted"}:
                break
            if time.monotonic() > deadline:
                targets = (await client.get(url + "/api/v1/targets")).json()["data"]["activeTargets"]
                health = {t["labels"]["job"]: (t["health"], t["lastError"]) for t in targets}
                raw = await query(client, url, "rag_dead_letters_total > 0")
                rec = await query(client, url, "rag:dead_letters:increase10m")
                raise AssertionError(f"dead letters seen by Prometheus: {reasons}; targets: {health}; {raw}; {rec}")
            await asyncio.sleep(0.5)

        # The workload's three answered queries are scraped twice (a rate needs two samples) before
        # any panel is read; on a fast machine the workload ends within a scrape interval or two.
        deadline = time.monotonic() + 30
        while not await query(client, url, "sum(rag_queries_total) >= 3 and sum(increase(rag_queries_total[5m])) > 0"):
            assert time.monotonic() < deadline, "the workload's queries never reached Prometheus"
            await asyncio.sleep(0.5)

        empty = []
        expressions = dashboard_expressions()
        for dashboard, title, expr in expressions:
            result = await query(client, url, expr)  # asserts the expression is valid
            # Data means a number: a quantile over series that saw nothing is NaN.
            if dashboard in MUST_HAVE_DATA and not any(r["value"][1] != "NaN" for r in result):
                empty.append(f"{dashboard} / {title}: {expr} -> {result}")
        assert not empty, "panels without data:\n" + "\n".join(empty)
        assert len(expressions) >= 50

        groups = (await client.get(url + "/api/v1/rules")).json()["data"]["groups"]
        rules = [rule for group in groups for rule in group["rules"]]
        assert len(rules) >= 20
        broken = [f"{r['name']}: {r.get('lastError')}" for r in rules if r["health"] != "ok"]
        assert not broken, broken
        for rule in rules:
            if rule["type"] == "recording":
                # A rule is evaluated every second: one whose inputs were scraped after its last
                # evaluation gets its data on the next one (bounded wait).
                recorded = await query(client, url, rule["name"])
                until = time.monotonic() + 15
                while not recorded and time.monotonic() < until:
                    await asyncio.sleep(0.5)
                    recorded = await query(client, url, rule["name"])
                assert recorded, f"recording rule {rule['name']} has no data"
            else:  # an alert's expression minus its threshold is a recorded signal, or checked here
                assert await query(client, url, rule["query"]) is not None

        # An alert reads a recorded signal, so it turns pending one evaluation after its input is
        # recorded: on a loaded machine that is some seconds after the recording rule (bounded wait).
        expected = {"RagStageErrors", "RagMessagesDeadLettered"}  # the invalid message's
        until = time.monotonic() + 30
        while True:
            alerts = (await client.get(url + "/api/v1/alerts")).json()["data"]["alerts"]
            firing = {a["labels"]["alertname"] for a in alerts}
            if expected <= firing or time.monotonic() > until:
                break
            await asyncio.sleep(0.5)
        assert expected <= firing, firing
        # the one rejected upload pages nobody (its error is the user's answer)
        alerts = (await client.get(url + "/api/v1/alerts")).json()["data"]["alerts"]
        assert not [a for a in alerts if "permanent" in (a["labels"].get("kind"), a["labels"].get("reason"))], alerts

        # The first failure of each kind shows in increase(), because every series starts at 0.
        kinds = await query(client, url, "sum by (kind) (increase(rag_errors_total[5m])) > 0")
        assert {k["metric"]["kind"] for k in kinds} == {"invalid_message", "permanent", "transient"}
        uploads = await query(client, url, "sum by (outcome) (rag_uploads_total) > 0")
        assert {u["metric"]["outcome"] for u in uploads} == {"accepted", "unchanged", "rejected"}
        llm = await query(client, url, "sum by (model, outcome) (rag_llm_requests_total) > 0")
        assert {(m["metric"]["model"], m["metric"]["outcome"]) for m in llm} == {
            ("openai/fake-small", "ok"),
            ("openai/broken", "error"),
        }
        ready = await query(client, url, "rag:gateway_ready:min")
        assert float(ready[0]["value"][1]) == 1, "the gateway's monitor keeps rag_gateway_ready current"
        # The DLQ size comes from the gateway's stream poll (every second), one scrape and one rule
        # evaluation behind the services' own dead-letter counters: wait for the rule to catch up.

        async def dlq_size() -> float:
            found = await query(client, url, "rag:dlq_messages:max")
            return float(found[0]["value"][1]) if found else 0.0

        await eventually(
            dlq_size, lambda size: size >= 3, timeout_s=30, what="rag:dlq_messages:max >= 3", interval_s=0.5
        )
