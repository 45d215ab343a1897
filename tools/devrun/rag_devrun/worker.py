"""``python -m rag_devrun.worker NAME``: one process of the system (see ``rag_devrun.processes``).

Configured by the same environment as the services (``NATS_URL``, ``RAG_DATA_DIR``, ...). Stops
cleanly on SIGTERM or SIGINT: the gateway stops taking requests, the services drain and close.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from rag_common.transport.runner import configure_logging, load_settings
from rag_devrun.processes import PROCESSES, START_FAILED
from rag_devrun.settings import DevRunSettings
from rag_devrun.stack import Stack, StackOptions, StartError, stop_on_signals


async def run(name: str, host: str, port: int, metrics: bool, settings: DevRunSettings) -> None:
    services = PROCESSES[name]
    options = StackOptions(
        data_dir=settings.data_dir,
        host=host,
        port=port,
        metrics=metrics,
        services=services,
        gateway=not services,
    )
    stop = stop_on_signals()
    async with Stack(options) as stack:
        await stack.wait(stop)


def main() -> None:
    settings = load_settings(DevRunSettings)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", choices=sorted(PROCESSES))
    parser.add_argument("--host", default=settings.host)
    parser.add_argument("--port", type=int, default=settings.port, help="the gateway's port")
    parser.add_argument("--no-metrics", action="store_true", help="no per-service /metrics ports")
    args = parser.parse_args()
    configure_logging(settings.log_level)
    try:
        asyncio.run(run(args.name, args.host, args.port, not args.no_metrics, settings))
    except StartError as exc:  # one line the runner repeats (Cluster.wait_ready), no traceback
        logging.getLogger("rag.devrun").error("%s%s", START_FAILED, exc)
        sys.exit(1)


if __name__ == "__main__":
    main()
