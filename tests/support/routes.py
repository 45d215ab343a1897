"""The gateway's routes as its API modules declare them (the app nests their routers)."""

from __future__ import annotations

import importlib
import pkgutil

from fastapi import APIRouter
from fastapi.routing import APIRoute

import rag_gateway.api


def api_routes() -> list[APIRoute]:
    """The routes of every router in ``rag_gateway.api``."""
    routes: list[APIRoute] = []
    for info in pkgutil.iter_modules(rag_gateway.api.__path__):
        router = getattr(importlib.import_module(f"rag_gateway.api.{info.name}"), "router", None)
        if isinstance(router, APIRouter):
            routes += [route for route in router.routes if isinstance(route, APIRoute)]
    return routes
