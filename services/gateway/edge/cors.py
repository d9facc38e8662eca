"""Cross-origin requests (CORS): which other origins' pages may call the API.

Off by default: a browser then refuses every response to a page of another origin (no
``Access-Control-Allow-Origin``), an ``EventSource`` on a run's events included. With
``HEADWATER_CORS_ORIGINS`` set (comma-separated origins such as
``https://app.example.com,http://localhost:3000``, or ``*`` for any) the gateway answers
preflights and adds the headers the Fetch standard asks for, through Starlette's
``CORSMiddleware``: the methods the API has, the request headers it reads beyond the
CORS-safelisted ones (``Content-Type`` for JSON bodies, ``Last-Event-ID`` for resuming an
event stream, ``Prefer`` for ``respond-async``), and the response headers a page may read
(``Location``, ``Retry-After``, ``Content-Location``, ``Preference-Applied``). Credentials
(cookies) are not allowed: the API takes none.

Sources: the Fetch standard, "CORS protocol" (https://fetch.spec.whatwg.org/#http-cors-protocol);
RFC 6454 (the origin: scheme, host and port, no path).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import FastAPI
from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response

from services.gateway.edge.problems import CORS_REFUSED, problem_response

ALLOW_METHODS = ("GET", "POST", "PUT", "DELETE")
"""Methods of the API a page may call (preflight ``Access-Control-Allow-Methods``)."""
ALLOW_HEADERS = ("Content-Type", "Last-Event-ID", "Prefer", "Accept")
"""Request headers a page may send (``Access-Control-Allow-Headers``)."""
EXPOSE_HEADERS = ("Location", "Retry-After", "Content-Location", "Preference-Applied")
"""Response headers a page may read (``Access-Control-Expose-Headers``)."""
MAX_AGE_S = 600
"""How long a browser may keep a preflight's answer, seconds (``Access-Control-Max-Age``)."""


def parse_origins(text: str) -> tuple[str, ...]:
    """The allowed origins of ``HEADWATER_CORS_ORIGINS``.

    Args:
        text: comma-separated origins (``scheme://host[:port]``), or ``*``; empty or
            blank: none (CORS off).

    Returns:
        The origins, without a trailing ``/``, in order; ``("*",)`` for any.

    Raises:
        ValueError: an entry that is not an origin (a path, no scheme, no host), naming
            the variable and the entry.
    """
    origins: list[str] = []
    for raw in text.split(","):
        entry = raw.strip().rstrip("/")
        if not entry:
            continue
        if entry == "*":
            return ("*",)
        parts = urlsplit(entry)
        if parts.scheme not in ("http", "https") or not parts.hostname or (
                parts.path or parts.query or parts.fragment):
            raise ValueError(f"HEADWATER_CORS_ORIGINS: {raw.strip()!r} is not an origin "
                             "(scheme://host[:port], e.g. https://app.example.com), nor *")
        origins.append(entry)
    return tuple(origins)


class ProblemCORSMiddleware(CORSMiddleware):
    """Starlette's ``CORSMiddleware`` whose refused preflight is a problem document (400,
    ``application/problem+json``, naming what was refused) like every other error
    answer, instead of its ``text/plain`` one."""

    def preflight_response(self, request_headers: Headers) -> Response:
        """The answer to a preflight (``OPTIONS`` with ``Access-Control-Request-Method``).

        Args:
            request_headers: the preflight's headers.

        Returns:
            Starlette's answer; a refusal (400) as a problem document with its headers.
        """
        answer = super().preflight_response(request_headers)
        if answer.status_code < 400:
            return answer
        refused = bytes(answer.body).decode().removeprefix("Disallowed CORS ")
        headers = {k: v for k, v in answer.headers.items()
                   if k.lower() not in ("content-type", "content-length")}
        return problem_response(
            CORS_REFUSED.status, CORS_REFUSED.title,
            f"this gateway does not allow the preflight's {refused} (origin "
            f"{request_headers.get('origin', '')!r}, method "
            f"{request_headers.get('access-control-request-method', '')!r}); see "
            "HEADWATER_CORS_ORIGINS", headers=headers,
            refused=[part.strip() for part in refused.split(",")])


def install(app: FastAPI, origins: tuple[str, ...]) -> None:
    """Answer cross-origin requests from ``origins`` (nothing when there are none). Add
    it after the other middleware, so that it runs first: a preflight is answered
    before anything else, and every response carries the headers, a 503 too."""
    if not origins:
        return
    app.add_middleware(ProblemCORSMiddleware, allow_origins=list(origins),
                       allow_methods=list(ALLOW_METHODS), allow_headers=list(ALLOW_HEADERS),
                       expose_headers=list(EXPOSE_HEADERS), allow_credentials=False,
                       max_age=MAX_AGE_S)
