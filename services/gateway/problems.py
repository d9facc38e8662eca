"""Errors as RFC 9457 problem details (``application/problem+json``)."""

from __future__ import annotations

import logging
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from services.common.db import UNAVAILABLE

PROBLEM_JSON = "application/problem+json"
RETRY_AFTER_S = "1"  # seconds, as the Retry-After header carries it

DATABASE_UNAVAILABLE = UNAVAILABLE
"""Errors that mean PostgreSQL cannot answer now (not that a query is wrong): 503."""

log = logging.getLogger("headwater.gateway")


class Problem(Exception):
    """Raised by a route to answer with a problem document.

    Args:
        status: HTTP status code.
        title: short summary, the same for every occurrence of this kind of problem.
        detail: what went wrong this time.
        headers: extra response headers (e.g. ``Retry-After``).
        extra: extension members, e.g. ``errors`` (a list of faults).
    """

    def __init__(self, status: int, title: str, detail: str = "",
                 headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(detail or title)
        self.status, self.title, self.detail = status, title, detail
        self.headers = headers or {}
        self.extra = extra


def problem_response(status: int, title: str, detail: str = "", instance: str = "",
                     headers: dict[str, str] | None = None, **extra: Any) -> Response:
    """A ``Response`` carrying a problem document."""
    doc: dict[str, Any] = {"type": "about:blank", "title": title, "status": status}
    if detail:
        doc["detail"] = detail
    if instance:
        doc["instance"] = instance
    doc.update(extra)
    return Response(orjson.dumps(doc), status_code=status, media_type=PROBLEM_JSON,
                    headers=headers)


def install(app: FastAPI) -> None:
    """Make every error answer ``application/problem+json``.

    ``Problem`` answers itself, request validation is 422, PostgreSQL being unavailable
    (``DATABASE_UNAVAILABLE``) is 503 with ``Retry-After``, and Starlette's HTTP errors
    (404 route, 405 method) keep their status. Anything else is caught by
    ``middleware.CatchAll``.
    """

    @app.exception_handler(Problem)
    async def _problem(request: Request, exc: Problem) -> Response:
        return problem_response(exc.status, exc.title, exc.detail, request.url.path,
                                exc.headers, **exc.extra)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        errors = [f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}"
                  for e in exc.errors()]
        return problem_response(422, "Invalid request", "; ".join(errors), request.url.path,
                                errors=errors)

    async def _database(request: Request, exc: Exception) -> Response:
        log.warning("PostgreSQL unavailable during %s %s: %r", request.method,
                    request.url.path, exc)
        return problem_response(503, "Database unavailable",
                                "PostgreSQL does not answer; retry later", request.url.path,
                                {"Retry-After": RETRY_AFTER_S})

    for error in DATABASE_UNAVAILABLE:
        app.add_exception_handler(error, _database)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        return problem_response(exc.status_code, str(exc.detail), "", request.url.path,
                                dict(exc.headers or {}))
