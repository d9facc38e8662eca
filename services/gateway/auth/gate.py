"""ASGI middleware that authenticates every API request (``HEADWATER_AUTH=on``).

A request to ``/v1/...`` needs ``Authorization: Bearer <token>`` (RFC 6750 §2.1) whose
role allows the operation (``role_needed``); the principal goes to
``scope["state"]["principal"]`` for the routes to scope what they read and write by
(``auth.scope.principal``). Without a token, or with a bad one, the answer is 401 with
``WWW-Authenticate: Bearer realm="headwater"`` (and ``error="invalid_token"`` for a
bad one, RFC 6750 §3.1); with a role too low, 403 (``error="insufficient_scope"``).
``/health``, ``/ready``, the web UI's files and the API's documents are open: they show
nothing of any tenant. ``/metrics`` (every tenant's figures together) needs a token of
tenant ``*`` (any role) unless ``HEADWATER_METRICS_AUTH=open`` (``METRICS_AUTH``). Off,
every request's principal is ``auth.OPEN``.
"""

from __future__ import annotations

import logging
import re

from starlette.types import ASGIApp, Receive, Scope, Send

from headwater.core.kinds.code.records import PATH_PATTERN
from services.common.auth.tokens import OPEN, Authenticator, AuthError, Principal
from services.gateway.edge.problems import problem_response

log = logging.getLogger("headwater.gateway")
REALM = 'Bearer realm="headwater"'
_SUBMIT = re.compile(
    r"/v1/(workflows|workflows/[^/]+/(cancel|rerun|reset|pause|resume|signals/[^/]+)"
    r"|run/[^/]*|operations)/?")
METRICS_PATH = "/metrics"
METRICS_AUTH = ("token", "open")
"""``HEADWATER_METRICS_AUTH``: with auth on, ``token`` (the default) asks ``/metrics`` for
a token of tenant ``*``; ``open`` serves it to anyone who reaches the port (a scraper on
a private network). Off, ``/metrics`` is open either way."""


def parse_metrics_auth(text: str) -> bool:
    """Whether ``HEADWATER_METRICS_AUTH`` (``text``) asks ``/metrics`` for a token.

    Raises:
        ValueError: neither ``token`` nor ``open``.
    """
    value = text.strip().lower()
    if value not in METRICS_AUTH:
        raise ValueError(f"HEADWATER_METRICS_AUTH must be token or open, got {text!r}")
    return value == "token"


def role_needed(method: str, path: str) -> str | None:
    """The least role an API request needs, or None for an open path.

    ``GET``/``HEAD`` of ``/v1/...``: ``read``. Submitting, cancelling, signalling,
    pausing or resuming a run, ``POST /v1/run/{name}`` and a bulk operation
    (``POST /v1/operations``, on the caller's tenant's runs): ``submit``. Writing a
    definition, a schedule, a limit or a trigger
    (``PUT``, ``DELETE``, pause, resume): ``admin``. Any other method on ``/v1/...``: ``admin``
    (a route that does not take it answers 405 after that). A ``POST`` to a path
    outside ``/v1/`` that may be a workflow's (``POST /research``, ``runs.paths``):
    ``submit``.
    """
    if not path.startswith("/v1/"):
        return "submit" if method == "POST" and _workflow_path(path) else None
    if method in ("GET", "HEAD"):
        return "read"
    if method == "POST" and _SUBMIT.fullmatch(path):
        return "submit"
    return "admin"


OPEN_PREFIXES = ("/health", "/ready", "/metrics", "/openapi.json", "/docs", "/redoc", "/ui",
                 "/favicon.ico")
"""The paths outside ``/v1/`` that are never a workflow's (``runs.paths``)."""


def _workflow_path(path: str) -> bool:
    """Whether a ``POST`` to ``path`` may run a workflow served there (``runs.paths``):
    it has the form of a workflow's path and is none of the open ones."""
    return bool(PATH_PATTERN.fullmatch(path)) and not any(
        path == p or path.startswith(p + "/") for p in OPEN_PREFIXES)


def _headers(scope: Scope, name: bytes) -> list[str]:
    return [bytes(value).decode("latin-1") for key, value in scope.get("headers", ())
            if key.lower() == name]


class Authenticate:
    """Lets a request through with its principal, or answers 401/403.

    Args:
        app: the application.
        authenticator: verifies tokens; None: auth is off.
        metrics_token: whether ``/metrics`` needs a token of tenant ``*`` (with auth on).
    """

    def __init__(self, app: ASGIApp, authenticator: Authenticator | None,
                 metrics_token: bool = True) -> None:
        self.app = app
        self.authenticator = authenticator
        self.metrics_token = metrics_token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Authenticate an HTTP request and pass it on, or answer it."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        path = scope.get("path", "")
        needed = role_needed(scope["method"], path)
        if path == METRICS_PATH and self.metrics_token:
            needed = "read"
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
        if path == METRICS_PATH and not me.every_tenant:
            response = problem_response(
                403, "Forbidden", f"the metrics are every tenant's; the token's tenant is "
                f"{me.tenant}: use a token of tenant *",
                headers={"WWW-Authenticate": f'{REALM}, error="insufficient_scope"'})
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
