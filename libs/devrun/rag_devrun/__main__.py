"""``python -m rag_devrun``: the one-command local system (what ``make run`` starts).

Starts NATS if none is reachable, every service and the gateway on :8000 with an embedded
Qdrant, loads the sample corpus, and serves until Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path

import httpx
from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from rag_common.runner import configure_logging, load_settings
from rag_devrun.corpus import load_corpus
from rag_devrun.stack import Stack, StackOptions

log = logging.getLogger("rag.devrun")


class DevRunSettings(BaseSettings):
    """The dev runner's defaults, from the same variables the services read (flags override them)."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    data_dir: Path = Field(Path("data"), validation_alias=AliasChoices("RAG_DATA_DIR"))
    host: str = Field("127.0.0.1", validation_alias=AliasChoices("RAG_GATEWAY_HOST"))
    port: int = Field(8000, validation_alias=AliasChoices("RAG_GATEWAY_PORT"))
    sample_corpus: str = Field("samples/orbitly/corpus", validation_alias=AliasChoices("RAG_SAMPLE_CORPUS"))
    # With RAG_GATEWAY_AUTH=on the corpus is loaded with the admin key.
    admin_key: SecretStr = Field(SecretStr(""), validation_alias=AliasChoices("RAG_GATEWAY_ADMIN_KEY"))
    log_level: str = Field("INFO", validation_alias=AliasChoices("RAG_LOG_LEVEL"))


async def main(args: argparse.Namespace, settings: DevRunSettings) -> None:
    options = StackOptions(data_dir=Path(args.data_dir), host=args.host, port=args.port)
    async with Stack(options) as stack:
        log.info("gateway on %s (NATS %s)", stack.base_url, stack.nats_url)
        if args.corpus:
            admin_key = settings.admin_key.get_secret_value()
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
        auth = ' -H "Authorization: Bearer $RAG_GATEWAY_ADMIN_KEY"' if settings.admin_key.get_secret_value() else ""
        print(
            f"ready: {stack.base_url}  (try: curl -s {stack.base_url}/v1/query{auth} "
            "-H 'content-type: application/json' "
            '-d \'{"question": "How much is the Pro plan?"}\')',
            flush=True,
        )
        await stack.wait()


if __name__ == "__main__":
    defaults = load_settings(DevRunSettings)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", default=str(defaults.data_dir))
    parser.add_argument("--host", default=defaults.host)
    parser.add_argument("--port", type=int, default=defaults.port)
    parser.add_argument("--corpus", default=defaults.sample_corpus, help="folder loaded at start ('' to skip)")
    configure_logging(defaults.log_level)
    asyncio.run(main(parser.parse_args(), defaults))
