"""The system under test: ``--url``, the ``make run`` system, or the whole system started here."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from rag_scorecard.client import answers_at, wait_ready
from rag_scorecard.errors import RunError, UsageError
from rag_scorecard.options import EvalOptions

DEFAULT_URL = "http://127.0.0.1:8000"


@contextlib.asynccontextmanager
async def system_under_test(options: EvalOptions, say: Callable[[str], None]) -> AsyncIterator[str]:
    """Yield the base URL to evaluate: ``--url``, the ``make run`` system, or one started here."""
    if options.url:
        if not await answers_at(options.url):
            raise UsageError(f"nothing answers at --url {options.url}")
        await wait_ready(options.url, options.ready_timeout_s)
        yield options.url.rstrip("/")
        return
    if await answers_at(DEFAULT_URL):
        say(f"using the running system at {DEFAULT_URL}")
        await wait_ready(DEFAULT_URL, options.ready_timeout_s)
        yield DEFAULT_URL
        return
    async with in_process_system(options, say) as base_url:
        yield base_url


@contextlib.asynccontextmanager
async def in_process_system(options: EvalOptions, say: Callable[[str], None]) -> AsyncIterator[str]:
    """The whole system in this process, on a private nats-server unless ``--nats-url`` names one.

    A private server (store ``<data-dir>/nats-eval``, kept between runs so document statuses and
    therefore idempotent re-ingest survive) keeps the run from sharing queue groups with any other
    system on the default NATS, whose workers would answer from their own vector store.
    """
    from rag_devrun.natsserver import LocalNatsServer  # imported here: only this path needs the services
    from rag_devrun.stack import Stack, StackOptions

    server: LocalNatsServer | None = None
    nats_url = options.nats_url
    if nats_url is None:
        server = LocalNatsServer(options.data_dir / "nats-eval")
        try:
            nats_url = await asyncio.to_thread(server.start)
        except RuntimeError as exc:
            raise RunError(f"could not start a private nats-server: {exc}") from None
    say(f"nothing answers at {DEFAULT_URL}: starting the system in this process (data in {options.data_dir}/)")
    # The evaluator logs every flagged answer as a warning; the report counts them, and on this
    # console they would only break up the progress bar.
    logging.getLogger("rag.evaluator").setLevel(logging.ERROR)
    try:
        async with Stack(StackOptions(data_dir=options.data_dir, nats_url=nats_url, port=0, metrics=False)) as stack:
            await wait_ready(stack.base_url, options.ready_timeout_s)
            yield stack.base_url
    finally:
        if server:
            server.stop()
