"""ASGI middleware that keeps every answer a problem document.

``RejectNul`` turns away U+0000 in the path or the query before any route sees it
(PostgreSQL ``text`` cannot hold it). ``CatchAll`` answers an unexpected exception with
a 500 problem instead of letting the server send a bare ``text/plain`` 500 and drop the
keep-alive connection. Creating it sets up the gateway's tracing when the environment
asks for it (``services.common.tracing``; FastAPI then traces each request itself).
"""

from __future__ import annotations

import logging
from urllib.parse import unquote_to_bytes

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.common import tracing
from services.common.auth.tokens import Authenticator
from services.gateway.auth.gate import Authenticate
from services.gateway.drain import CountRequests, Drain
from services.gateway.edge import cors
from services.gateway.edge.problems import problem_response

log = logging.getLogger("headwater.gateway")


def nul_in(scope: Scope) -> str | None:
    """Where an HTTP request carries U+0000: ``"path"``, ``"query"`` or ``None``.

    Args:
        scope: the ASGI HTTP scope (``path`` is already percent-decoded,
            ``query_string`` is raw bytes).
    """
    if "\x00" in scope.get("path", ""):
        return "path"
    if b"\x00" in unquote_to_bytes(scope.get("query_string", b"")):
        return "query"
    return None


class RejectNul:
    """Answers 400 to a request whose path or query contains U+0000 (``%00``).

    Args:
        app: the application to call for every other request.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Reject or pass the request on."""
        where = nul_in(scope) if scope["type"] == "http" else None
        if where is None:
            await self.app(scope, receive, send)
            return
        response = problem_response(400, "Bad request", f"the {where} contains U+0000 (%00)")
        await response(scope, receive, send)


class CatchAll:
    """Answers 500 ``application/problem+json`` when a route raises unexpectedly.

    The exception is logged with its traceback and not re-raised, so the server keeps
    the connection. Once the response has started nothing can replace it: the exception
    is re-raised and the server closes that one connection.

    Args:
        app: the application to guard.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        tracing.configure("headwater-gateway")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Call the application; answer a problem if it fails before responding."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("unexpected error in %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            response = problem_response(500, "Internal error",
                                        "an unexpected error; it has been logged")
            await response(scope, receive, send)


def install(app: FastAPI, drain: Drain, authenticator: Authenticator | None,
            cors_origins: tuple[str, ...], metrics_token: bool = True) -> None:
    """Add the gateway's middleware, outermost first: CORS (preflights and 503s answered
    with their headers too), the drain's request count, ``RejectNul``, ``CatchAll``,
    then ``auth.gate.Authenticate`` (``authenticator`` None: auth off; ``metrics_token``:
    ``/metrics`` needs a token of tenant ``*``)."""
    app.add_middleware(Authenticate, authenticator=authenticator,
                       metrics_token=metrics_token)
    app.add_middleware(CatchAll)
    app.add_middleware(RejectNul)
    app.add_middleware(CountRequests, drain=drain)
    cors.install(app, cors_origins)  # added last: runs first
