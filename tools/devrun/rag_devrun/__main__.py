"""``python -m rag_devrun``: the one-command local system (what ``make run`` starts).

Starts NATS if none is reachable, every service and the gateway on :8000 with an embedded
Qdrant, loads the sample corpus, and serves until Ctrl-C. ``--processes`` runs one process per
service instead of all in this one (``make run-processes``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import httpx

from rag_common.transport.runner import configure_logging, load_settings
from rag_devrun.corpus import LoadResult, load_corpus
from rag_devrun.natsserver import ensure_nats
from rag_devrun.processes import Cluster
from rag_devrun.settings import DevRunSettings
from rag_devrun.stack import Stack, StackOptions, StartError, stop_on_signals
from rag_gateway.settings import GatewaySettings

log = logging.getLogger("rag.devrun")
READY_TIMEOUT_S = 180.0  # every process loads its settings and the embedding model on a slow machine
T = TypeVar("T")


async def load_sample(base_url: str, corpus: str, settings: DevRunSettings) -> LoadResult:
    """Upload the sample corpus through the HTTP API and wait until it is indexed."""
    admin_key = settings.admin_key.get_secret_value()
    headers = {"Authorization": f"Bearer {admin_key}"} if admin_key else {}
    async with httpx.AsyncClient(base_url=base_url, timeout=60, headers=headers) as client:

        def progress(done: int, total: int) -> None:
            print(f"\rloading sample corpus: {done}/{total} documents", end="", flush=True)

        result = await load_corpus(client, Path(corpus), progress=progress)
        print()
        log.info(
            "sample corpus: %d documents, %d chunks, %d failed, %.1fs",
            len(result.statuses),
            result.chunks,
            len(result.failed),
            result.seconds,
        )
        return result


def say_ready(base_url: str, settings: DevRunSettings) -> None:
    auth = ' -H "Authorization: Bearer $RAG_GATEWAY_ADMIN_KEY"' if settings.admin_key.get_secret_value() else ""
    print(
        f"ready: {base_url}  (try: curl -s {base_url}/v1/query{auth} "
        "-H 'content-type: application/json' "
        '-d \'{"question": "How much is the Pro plan?"}\')',
        flush=True,
    )


async def main(args: argparse.Namespace, settings: DevRunSettings) -> None:
    """Every service and the gateway in this process, until Ctrl-C or SIGTERM: then the gateway
    stops taking requests and the services drain and close (``Stack.__aexit__``)."""
    options = StackOptions(data_dir=Path(args.data_dir), host=args.host, port=args.port)
    stop = stop_on_signals()
    async with Stack(options) as stack:
        log.info("gateway on %s (NATS %s)", stack.base_url, stack.nats_url)
        if args.corpus:
            await load_sample(stack.base_url, args.corpus, settings)
        say_ready(stack.base_url, settings)
        await stack.wait(stop)


class ProcessEnded(RuntimeError):
    """A process of ``--processes`` ended on its own: the others are stopped and the runner exits 1."""


async def unless_stopped(work: Coroutine[Any, Any, T], stop: asyncio.Event) -> T | None:
    """``work``'s result, or None when ``stop`` is set first (Ctrl-C or SIGTERM while the processes
    start or the corpus loads): the runner then stops the processes without waiting any longer."""
    task = asyncio.ensure_future(work)
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    if stop.is_set():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        return None
    return task.result()


async def main_processes(args: argparse.Namespace, settings: DevRunSettings) -> None:
    """The same system as one process per service (``rag_devrun.processes``), until Ctrl-C or SIGTERM."""
    data_dir = Path(args.data_dir)  # absolute: the processes share it
    url = GatewaySettings().nats_url
    nats_url, nats_server = await ensure_nats(url, data_dir / "nats")
    if nats_server:
        log.info("no NATS at %s: started nats-server at %s", url, nats_url)
    cluster = Cluster(data_dir, nats_url, args.port, host=args.host, metrics=True, own_sessions=True)
    stop = stop_on_signals()
    try:
        cluster.start_all()
        try:
            if (seconds := await unless_stopped(cluster.wait_ready(READY_TIMEOUT_S), stop)) is None:
                return
        except RuntimeError as exc:  # a process that ended, named with its reason: no traceback
            raise StartError(str(exc)) from None
        log.info("%d processes ready in %.1fs (logs in %s)", len(cluster.procs), seconds, cluster.logs)
        if args.corpus and await unless_stopped(load_sample(cluster.base_url, args.corpus, settings), stop) is None:
            return
        say_ready(cluster.base_url, settings)
        while not stop.is_set():
            if died := cluster.exited():
                raise ProcessEnded(f"process ended: {died} (logs in {cluster.logs}); the others are stopped")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=1.0)
    finally:
        await asyncio.to_thread(cluster.stop_all)
        if nats_server:
            nats_server.stop()


if __name__ == "__main__":
    defaults = load_settings(DevRunSettings)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", default=str(defaults.data_dir))
    parser.add_argument("--host", default=defaults.host)
    parser.add_argument("--port", type=int, default=defaults.port)
    parser.add_argument("--corpus", default=defaults.sample_corpus, help="folder loaded at start ('' to skip)")
    parser.add_argument(
        "--processes", action="store_true", help="one process per service: store, router, generator, evaluator, gateway"
    )
    configure_logging(defaults.log_level)
    arguments = parser.parse_args()
    arguments.data_dir = str(Path(arguments.data_dir).resolve())
    try:
        asyncio.run((main_processes if arguments.processes else main)(arguments, defaults))
    except (StartError, ProcessEnded) as exc:  # said without a traceback; everything started is stopped
        log.error("%s", exc)
        sys.exit(1)
    log.info("stopped")
