"""Browser-facing protection: security headers on every response, CORS only for listed origins."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.datastructures import MutableHeaders
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Any HTML the gateway serves may load scripts, styles, images and data only from itself: no
# inline script, no third-party origin, never framed by another site.
HTML_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# JSON, SSE and other non-HTML responses: nothing may run or be embedded from them.
API_CSP = "default-src 'none'; frame-ancestors 'none'"
# The interactive docs load Swagger UI / ReDoc from the gateway (DOCS_ASSETS), started by an inline
# script; nothing from another origin.
DOCS_ASSETS = "/docs-assets"
DOCS_CSP = (
    "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; worker-src blob:; connect-src 'self'; frame-ancestors 'none'"
)
DOCS_PATHS = frozenset({"/docs", "/redoc", "/docs/oauth2-redirect"})
ALWAYS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
API_HEADERS = {**ALWAYS, "Content-Security-Policy": API_CSP}
CORS_ALLOWED_HEADERS = ["Authorization", "X-API-Key", "Content-Type", "X-Request-ID", "Last-Event-ID"]
CORS_EXPOSED_HEADERS = ["X-Request-ID", "X-Client-Request-ID", "Retry-After", "WWW-Authenticate"]


class SecurityHeadersMiddleware:
    """Add the headers to every response a route or middleware sends, unless it set its own."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in ALWAYS.items():
                    headers.setdefault(name, value)
                html = headers.get("content-type", "").startswith("text/html")
                csp = DOCS_CSP if path in DOCS_PATHS else HTML_CSP if html else API_CSP
                headers.setdefault("Content-Security-Policy", csp)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def install_browser_protection(app: FastAPI, cors_origins: list[str]) -> None:
    """CORS (only when origins are configured) inside, security headers outermost.

    Keys travel in headers, never cookies, so credentials are not allowed cross-origin.
    """
    if cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=CORS_ALLOWED_HEADERS,
            expose_headers=CORS_EXPOSED_HEADERS,
            allow_credentials=False,
            max_age=600,
        )
    app.add_middleware(SecurityHeadersMiddleware)
