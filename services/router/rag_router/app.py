"""Router service: scores each question and picks a model tier (``rag_router.routing``); the
transport around it is ``rag_router.handlers``."""

from __future__ import annotations

import asyncio

from faststream import FastStream
from faststream.nats import NatsBroker

from rag_common.config.texts import check_collections_file
from rag_common.store.profiles import ProfileBook, open_profiles_bucket
from rag_common.text.injection import warm
from rag_common.transport.broker import make_broker
from rag_common.transport.service import create_service
from rag_common.transport.telemetry import ServiceTelemetry, setup_telemetry
from rag_router.handlers import RouterHandlers, subscribe
from rag_router.settings import RouterSettings


def build_broker(
    settings: RouterSettings, telemetry: ServiceTelemetry, profiles: ProfileBook | None = None
) -> tuple[NatsBroker, RouterHandlers]:
    """The broker with the router's handler subscribed; ``profiles``: where collection profiles are
    read (default: the collections file alone)."""
    broker = make_broker(settings, telemetry)
    handlers = RouterHandlers(settings, telemetry, broker, profiles or ProfileBook(settings.collections_file))
    subscribe(broker, handlers)
    return broker, handlers


def create_app(settings: RouterSettings, telemetry: ServiceTelemetry | None = None) -> FastStream:
    telemetry = telemetry or setup_telemetry("router", settings=settings)
    profiles = ProfileBook(settings.collections_file)

    async def load() -> None:
        check_collections_file(settings.collections_file)
        await asyncio.to_thread(warm)  # the lookalike letters' table, before the first question

    async def connected() -> None:
        profiles.kv = await open_profiles_bucket(broker, settings)

    broker, _ = build_broker(settings, telemetry, profiles)
    return create_service(broker, settings, telemetry, load=load, connected=connected)
