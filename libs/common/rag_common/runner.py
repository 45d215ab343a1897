"""Start one service as its own process: settings from the environment, clean drain on SIGTERM."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable
from typing import TypeVar

from faststream import FastStream
from pydantic import ValidationError
from pydantic_settings import BaseSettings

S = TypeVar("S", bound=BaseSettings)


def load_settings(settings_cls: type[S]) -> S:
    """Build settings or exit with a message naming each bad setting (fail at start-up, not later)."""
    try:
        return settings_cls()
    except ValidationError as exc:
        lines = [f"  {'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        sys.exit(f"invalid configuration for {settings_cls.__name__}:\n" + "\n".join(lines))


def configure_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        level=os.environ.get("RAG_LOG_LEVEL", level).upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)


def run_service(create_app: Callable[[S], FastStream], settings_cls: type[S]) -> None:
    settings = load_settings(settings_cls)
    configure_logging()
    asyncio.run(create_app(settings).run())
