"""The web chat page (``/``) and the embeddable widget (``/widget.js``): static files, no build step."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

router = APIRouter(include_in_schema=False)


@router.get("/")
async def page() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html; charset=utf-8")


@router.get("/assessments")
async def assessments_page() -> FileResponse:
    return FileResponse(STATIC_DIR / "assessments.html", media_type="text/html; charset=utf-8")


@router.get("/widget.js")
async def widget() -> FileResponse:
    return FileResponse(STATIC_DIR / "widget.js", media_type="text/javascript; charset=utf-8")


def install_web(app: FastAPI) -> None:
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
