"""ASGI middleware that authenticates every API request (``HEADWATER_AUTH=on``).

A request to ``/v1/...`` needs ``Authorization: Bearer <token>`` (RFC 6750 §2.1) whose
role allows the operation (``role_needed``); the principal goes to
``scope["state"]["principal"]`` for the routes to scope what they read and write by
(``auth.scope.principal``). Without a token, or with a bad one, the answer is 401 with
``WWW-Authenticate: Bearer realm="headwater"`` (and ``error="invalid_token"`` for a
bad one, RFC 6750 §3.1); with a role too low, 403 (``error="insufficient_scope"``).
``/health``, ``/ready``, ``/metrics``, the web UI's files and the API's documents are
open: they show nothing of any tenant. Off, every request's principal is ``auth.OPEN``.
"""

from __future__ import annotations

import logging
import re

from starlette.types import ASGIApp, Receive, Scope, Send

from services.common.auth.tokens import OPEN, Authenticator, AuthError, Principal
from services.gateway.edge.problems import problem_response

log = logging.getLogger("headwater.gateway")
REALM = 'Bearer realm="headwater"'
_SUBMIT = re.compile(
    r"/v1/(workflows|workflows/[^/]+/(cancel|rerun|reset|signals/[^/]+)|run/[^/]*)/?")


def role_needed(method: str, path: str) -> str | None:
    """The least role an API request needs, or None for an open path.

    ``GET``/``HEAD`` of ``/v1/...``: ``read``. Submitting, cancelling, signalling and
    ``POST /v1/run/{name}``: ``submit``. Writing a definition or a schedule (``PUT``,
    ``DELETE``, pause, resume): ``admin``. Any other method on ``/v1/...``: ``admin``
    (a route that does not take it answers 405 after that).
    """
    if not path.startswith("/v1/"):
        return None
    if method in ("GET", "HEAD"):
        return "read"
    if method == "POST" and _SUBMIT.fullmatch(path):
        return "submit"
    return "admin"


def _headers(scope: Scope, name: bytes) -> list[str]:
    return [bytes(value).decode("latin-1") for key, value in scope.get("headers", ())
            if key.lower() == name]


class Authenticate:
    """Lets a request through with its principal, or answers 401/403.

    Args:
        app: the application.
        authenticator: verifies tokens; None: auth is off.
    """

    def __init__(self, app: ASGIApp, authenticator: Authenticator | None) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Authenticate an HTTP request and pass it on, or answer it."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        needed = role_needed(scope["method"], scope.get("path", ""))
        if self.authenticator is None or needed is None or scope["method"] == "OPTIONS":
            state["principal"] = OPEN if self.authenticator is None else None
            await self.app(scope, receive, send)
            return
        given = _headers(scope, b"authorization")
        value = given[0] if given else None
        try:
            if len(given) > 1:  # never choose between two
                raise AuthError("two Authorization headers; send one")
            me: Principal = self.authenticator.header(value)
        except AuthError as e:
            challenge = REALM if not value else f'{REALM}, error="invalid_token"'
            response = problem_response(401, "Unauthorized", str(e),
                                        headers={"WWW-Authenticate": challenge})
            await response(scope, receive, send)
            return
        if not me.may(needed):
            response = problem_response(
                403, "Forbidden", f"the token's role is {me.role}; this needs {needed}",
                headers={"WWW-Authenticate": f'{REALM}, error="insufficient_scope"'},
                role=me.role, needs=needed)
            await response(scope, receive, send)
            return
        state["principal"] = me
        await self.app(scope, receive, send)
