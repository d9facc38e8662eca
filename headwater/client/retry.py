"""When ``headwater.client`` tries a request again, and what an error answer raises,
without I/O: ``Client`` and ``AsyncClient`` keep a ``Tries`` per request (and per
event stream) and only send, sleep and read as it says.

The policy: a connection error (the transport's, timeouts included) and a 503 are tried
again, ``retries`` times, after ``delay_s`` (``Retry-After`` or a doubling backoff, at
most ``BACKOFF_MAX_S``); any other error answer is raised at once, as the
``headwater.errors`` class of its status (``error_for``). Tries are safe for every
method: a submission's id and a signal's ``signal_id`` are chosen before the first try,
so a retry names the same run or signal.
"""

from __future__ import annotations

import json
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from headwater import errors

BACKOFF_BASE_S = 0.2
"""The first retry's delay, seconds; each further one doubles, up to ``BACKOFF_MAX_S``."""
BACKOFF_MAX_S = 2.0
"""The longest delay between two tries, seconds (a ``Retry-After`` too is cut to it)."""
_ERRORS: dict[int, type[errors.HeadwaterHTTPError]] = {
    400: errors.BadRequest, 401: errors.Unauthorized, 403: errors.Forbidden,
    404: errors.NotFound, 409: errors.Conflict, 410: errors.Gone,
    422: errors.Unprocessable, 429: errors.TooManyRequests, 503: errors.Unavailable}


def unexpected(response: httpx.Response) -> bool:
    """Whether an answer is not the success it should be: an error, or a redirect
    (3xx: the gateway redirects no call of this client, so one means a wrong path or
    URL)."""
    return response.status_code >= 300


def error_for(response: httpx.Response) -> errors.HeadwaterHTTPError:
    """The exception of an error answer (its body read): its problem document (RFC
    9457) mapped by status (``errors.NotFound`` for 404 ...; ``HeadwaterHTTPError`` for
    the others, a redirect included)."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    doc: dict[str, Any] = body if isinstance(body, dict) else {}
    kind = _ERRORS.get(response.status_code, errors.HeadwaterHTTPError)
    args = (response.status_code, str(doc.get("type") or "about:blank"),
            str(doc.get("title") or response.reason_phrase),
            str(doc.get("detail") or ("" if doc else response.text[:500])), doc)
    if kind is errors.TooManyRequests:
        return errors.TooManyRequests(*args, retry_after=retry_after_s(response))
    return kind(*args)


def retry_after_s(response: httpx.Response) -> float | None:
    """The ``Retry-After`` header in seconds (RFC 9110, section 10.2.3: seconds or an
    HTTP date), or None when absent or malformed."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
        date = parsedate_to_datetime(response.headers.get("date", "")) if \
            response.headers.get("date") else None
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - date).total_seconds()) if date else None


def delay_s(tries: int, response: httpx.Response | None = None) -> float:
    """The wait before try ``tries + 1``, seconds: ``Retry-After`` when the answer
    has one, else ``BACKOFF_BASE_S`` doubled per try; at most ``BACKOFF_MAX_S``."""
    asked = retry_after_s(response) if response is not None else None
    wait = asked if asked is not None else BACKOFF_BASE_S * 2 ** tries
    return min(wait, BACKOFF_MAX_S)


def retryable(response: httpx.Response) -> bool:
    """Whether an answer is worth another try with the same request: 503 (Kafka or
    PostgreSQL unavailable, the gateway connecting or stopping)."""
    return response.status_code == 503


class Tries:
    """The tries of one request, or of one event stream since its last event: whether
    a failure is tried again, and after how long.

    Args:
        retries: extra tries after a connection error or a 503 (0: none).
        what: what is asked, for ``GatewayUnreachable``'s message (``GET
            http://gw/v1/queues``).
    """

    def __init__(self, retries: int, what: str) -> None:
        self.retries, self.what = retries, what
        self.count = 0
        """The failures since the first try (or the last ``reset``)."""

    def check(self, error: httpx.TransportError) -> None:
        """Take a connection error: another try is left, or none.

        Raises:
            GatewayUnreachable: no try is left (from ``error``).
        """
        if self.count >= self.retries:
            raise errors.GatewayUnreachable(f"{self.what}: {error!r}") from error

    def lost(self, error: httpx.TransportError) -> float:
        """``check`` the connection error, then ``pause``: the wait before the next try,
        seconds.

        Raises:
            GatewayUnreachable: no try is left.
        """
        self.check(error)
        return self.pause()

    def again(self, response: httpx.Response) -> bool:
        """Whether an answer is tried again: a 503 while tries are left."""
        return retryable(response) and self.count < self.retries

    def answered(self, response: httpx.Response) -> float | None:
        """Take a request's answer.

        Returns:
            None for the answer to return (2xx), else the wait before the next try,
            seconds (a 503 while tries are left: its ``Retry-After`` counts).

        Raises:
            HeadwaterHTTPError: any other error answer or a redirect (``error_for``).
        """
        if self.again(response):
            return self.pause(response)
        if unexpected(response):
            raise error_for(response)
        return None

    def pause(self, response: httpx.Response | None = None) -> float:
        """Count a failure: the wait before the next try, seconds (``delay_s``)."""
        wait = delay_s(self.count, response)
        self.count += 1
        return wait

    def reset(self) -> None:
        """Start counting afresh (an event stream after each event)."""
        self.count = 0
