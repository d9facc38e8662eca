"""Errors as RFC 9457 problem details (``application/problem+json``)."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

PROBLEM_JSON = "application/problem+json"


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
    """Make every error answer ``application/problem+json``."""

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

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        return problem_response(exc.status_code, str(exc.detail), "", request.url.path,
                                dict(exc.headers or {}))
