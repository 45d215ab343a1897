"""``python -m rag_devrun``: the one-command local system (what ``make run`` starts).

Starts NATS if none is reachable, every service and the gateway on :8000 with an embedded
Qdrant, loads the sample corpus, and serves until Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from pathlib import Path

import httpx

from rag_common.runner import configure_logging
from rag_devrun.corpus import load_corpus
from rag_devrun.stack import Stack, StackOptions

log = logging.getLogger("rag.devrun")


async def main(args: argparse.Namespace) -> None:
    options = StackOptions(data_dir=Path(args.data_dir), host=args.host, port=args.port)
    async with Stack(options) as stack:
        log.info("gateway on %s (NATS %s)", stack.base_url, stack.nats_url)
        if args.corpus:
            # With RAG_GATEWAY_AUTH=on the corpus is loaded with the admin key.
            admin_key = os.environ.get("RAG_GATEWAY_ADMIN_KEY", "")
            headers = {"Authorization": f"Bearer {admin_key}"} if admin_key else {}
            async with httpx.AsyncClient(base_url=stack.base_url, timeout=60, headers=headers) as client:

                def progress(done: int, total: int) -> None:
                    print(f"\rloading sample corpus: {done}/{total} documents", end="", flush=True)

                result = await load_corpus(client, Path(args.corpus), progress=progress)
                print()
                log.info(
                    "sample corpus: %d documents, %d chunks, %d failed, %.1fs",
                    len(result.statuses),
                    result.chunks,
                    len(result.failed),
                    result.seconds,
                )
        auth = ' -H "Authorization: Bearer $RAG_GATEWAY_ADMIN_KEY"' if os.environ.get("RAG_GATEWAY_ADMIN_KEY") else ""
        print(
            f"ready: {stack.base_url}  (try: curl -s {stack.base_url}/v1/query{auth} "
            "-H 'content-type: application/json' "
            '-d \'{"question": "How much is the Pro plan?"}\')',
            flush=True,
        )
        await stack.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", default=os.environ.get("RAG_DATA_DIR", "data"))
    parser.add_argument("--host", default=os.environ.get("RAG_GATEWAY_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("RAG_GATEWAY_PORT", "8000")))
    parser.add_argument(
        "--corpus",
        default=os.environ.get("RAG_SAMPLE_CORPUS", "samples/orbitly/corpus"),
        help="folder loaded at start ('' to skip)",
    )
    configure_logging()
    asyncio.run(main(parser.parse_args()))
