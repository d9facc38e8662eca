"""The web UI at ``/ui``: one HTML page for every view (the page's script routes by the
path, with the History API), and its static assets under ``/ui/assets/``.

The files are the package data of ``services.gateway.ui`` (``static/``), read once and
kept in memory; only files of the known media types are served, by their path below
``static/``, so no request path reaches the file system. An unknown asset is a 404
problem document, like every other error of the gateway. Every answer carries a strict
Content-Security-Policy: scripts, styles, images and connections from this origin only
(no inline script or style, no ``eval``), no framing, no ``<base>``, forms posting here
only (CSP Level 3, https://www.w3.org/TR/CSP3/): the errors and redirects below ``/ui``
too (``SecurityHeaders``). ``HEAD`` is answered as ``GET`` (RFC 9110 §9.3.2). The pages
call the API on the same
origin, so they need no CORS. The routes are not operations of the API: they are left
out of the OpenAPI document.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import PurePosixPath

from fastapi import APIRouter, FastAPI, Request
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.gateway.edge.problems import NO_ROUTE, Problem

router = APIRouter(include_in_schema=False)

PREFIX = "/ui"
ASSETS = f"{PREFIX}/assets"
PAGES = ("/", "/runs", "/runs/{workflow_id}", "/queues", "/definitions", "/definitions/{name}",
         "/schedules", "/schedules/{name}", "/operations")
"""The views (below ``/ui``), each answered with ``index.html``; the script picks the
view from the path, so a view's address can be bookmarked and reloaded."""
INDEX = "index.html"
STATIC_DIR = resources.files("services.gateway.ui").joinpath("static")
"""The UI's files (package data of ``services.gateway.ui``)."""
CSP = "; ".join((
    "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'",
    "connect-src 'self'", "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'"))
"""The Content-Security-Policy of every UI answer."""
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",  # revalidate (ETag), so a new version shows at once
}
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",  # RFC 9239 §6
    ".svg": "image/svg+xml",
}
"""The media types served, by file suffix; a file of any other suffix is not served."""


@dataclass(frozen=True)
class Asset:
    """One static file.

    Attributes:
        body: its bytes.
        media_type: its ``Content-Type``.
        etag: its entity tag (a strong one: a digest of ``body``, quoted).
    """

    body: bytes
    media_type: str
    etag: str


def load_assets(root: Traversable) -> dict[str, Asset]:
    """Every file of a known media type below ``root``, by its ``/``-separated path.

    Args:
        root: the directory of the static files.

    Returns:
        ``{"index.html": Asset, "js/main.js": Asset, ...}``; empty when ``root`` is not
        a directory.
    """
    found: dict[str, Asset] = {}
    pending: list[tuple[str, Traversable]] = [("", root)] if root.is_dir() else []
    while pending:
        prefix, folder = pending.pop()
        for entry in folder.iterdir():
            path = prefix + entry.name
            if entry.is_dir():
                pending.append((path + "/", entry))
                continue
            media_type = MEDIA_TYPES.get(PurePosixPath(entry.name).suffix)
            if media_type is not None:
                body = entry.read_bytes()
                etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
                found[path] = Asset(body, media_type, etag)
    return found


@functools.cache
def assets() -> dict[str, Asset]:
    """The UI's files, read from the package once."""
    return load_assets(STATIC_DIR)


def _matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an ``If-None-Match`` header names ``etag`` (RFC 9110 §13.1.2: weak
    comparison, ``*`` matches any)."""
    if not if_none_match:
        return False
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return "*" in tags or etag in tags


def answer(request: Request, path: str) -> Response:
    """The asset at ``path`` (below ``static/``) with the UI's headers; 304 when the
    request's ``If-None-Match`` names its current tag.

    Raises:
        Problem: 404 (``no-route``) when the UI has no such file.
    """
    asset = assets().get(path)
    if asset is None:
        raise Problem(NO_ROUTE.status, NO_ROUTE.title,
                      f"the UI has no asset {path!r} (its files are under {ASSETS}/)")
    headers = {**SECURITY_HEADERS, "ETag": asset.etag}
    if _matches(request.headers.get("if-none-match"), asset.etag):
        return Response(status_code=304, headers=headers)
    return Response(asset.body, media_type=asset.media_type, headers=headers)


class SecurityHeaders:
    """ASGI middleware: every answer to a path below ``/ui`` carries
    ``SECURITY_HEADERS`` (those the answer did not set itself), whoever made it: a
    problem document (404, 405), a redirect."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.raw = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path != PREFIX and not path.startswith(PREFIX + "/"):
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                have = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *((k, v) for k, v in self.raw if k not in have)]
            await send(message)

        await self.app(scope, receive, with_headers)


def install(app: FastAPI) -> FastAPI:
    """Serve the UI from ``app``.

    Returns:
        ``app``, with the UI's routes (outside the OpenAPI document) and their headers
        on every answer below ``/ui`` (``SecurityHeaders``).
    """
    app.include_router(router)
    app.add_middleware(SecurityHeaders)
    return app


@router.api_route(PREFIX, methods=["GET", "HEAD"])
async def ui_root() -> Response:
    """``/ui`` without the slash: redirect to the runs list, ``/ui/``."""
    return RedirectResponse(f"{PREFIX}/", status_code=308)


async def page(request: Request) -> Response:
    """Any view of the UI: the one HTML page (its script renders the view)."""
    return answer(request, INDEX)


for _view in PAGES:
    router.add_api_route(PREFIX + _view, page, methods=["GET", "HEAD"])


@router.api_route(ASSETS + "/{path:path}", methods=["GET", "HEAD"])
async def asset(request: Request, path: str) -> Response:
    """A static file of the UI (``/ui/assets/js/main.js``); 404 problem when unknown."""
    return answer(request, path)
