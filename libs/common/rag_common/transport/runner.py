"""Start one service as its own process: settings from the environment, clean drain on SIGTERM."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from typing import TypeVar

from faststream import FastStream
from pydantic import ValidationError
from pydantic_settings import BaseSettings

from rag_common.config.settings import ServiceSettings

S = TypeVar("S", bound=BaseSettings)
R = TypeVar("R", bound=ServiceSettings)


def load_settings(settings_cls: type[S]) -> S:
    """Build settings or exit with a message naming each bad setting (fail at start-up, not later)."""
    try:
        return settings_cls()
    except ValidationError as exc:
        lines = [f"  {'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        sys.exit(f"invalid configuration for {settings_cls.__name__}:\n" + "\n".join(lines))


def configure_logging(level: str = "INFO") -> None:
    """Log lines with time, level and logger; ``level`` is the ``RAG_LOG_LEVEL`` setting."""
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)


def run_service(create_app: Callable[[R], FastStream], settings_cls: type[R]) -> None:
    """``python -m <service>``: settings from the environment, then the app until SIGTERM (drained)."""
    settings = load_settings(settings_cls)
    configure_logging(settings.log_level)
    asyncio.run(create_app(settings).run())
