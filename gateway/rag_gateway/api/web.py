"""The web chat page (``/``) and the embeddable widget (``/widget.js``): static files, no build step.

The page's upload label and file picker name the accepted formats; they are filled in from the one
list (``rag_common.wire.formats``) when the page is served, so the page cannot offer a format the
gateway refuses, nor miss one it takes. The words for a raised flag come the same way from
``rag_common.wire.messages.flags.WORDS``, as a JSON block the page's script reads.
"""

from __future__ import annotations

import functools
import html
import json
from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles

from rag_common.wire.formats import accept_attribute, described
from rag_common.wire.messages.flags import WORDS

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

router = APIRouter(include_in_schema=False)


def flag_notices_json() -> str:
    """Each flag's notice as JSON that is safe inside ``<script type="application/json">``."""
    notices = {str(flag): words.notice for flag, words in WORDS.items()}
    return json.dumps(notices, ensure_ascii=False).replace("<", "\\u003c")


@functools.cache
def page_html() -> str:
    """``index.html`` with the formats and flag notices filled in (read once: the file ships with the package)."""
    template = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    filled = (
        template.replace("{{formats}}", html.escape(described()))
        .replace("{{accept}}", accept_attribute())
        .replace("{{flag_notices}}", flag_notices_json())
    )
    if "{{" in filled:
        raise RuntimeError(f"{STATIC_DIR / 'index.html'}: a placeholder is left unfilled")
    return filled


@router.get("/")
async def page() -> HTMLResponse:
    return HTMLResponse(page_html())


@router.get("/assessments")
async def assessments_page() -> FileResponse:
    return FileResponse(STATIC_DIR / "assessments.html", media_type="text/html; charset=utf-8")


@router.get("/widget.js")
async def widget() -> FileResponse:
    return FileResponse(STATIC_DIR / "widget.js", media_type="text/javascript; charset=utf-8")


def install_web(app: FastAPI) -> None:
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
