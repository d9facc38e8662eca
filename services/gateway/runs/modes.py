"""Waiting for a run to end, for ``POST /v1/run/{name}``: the three ways of answering
it (RFC 7240 ``Prefer: respond-async``, ``Accept: text/event-stream``, or waiting).

The wait rides on the projector's ``NOTIFY`` (``stream.Notifier``): the run's status is
read again after each wake-up, and at least every ``stream.RECHECK_S`` (a notification
sent between the read and the wait is missed, and a lost listening connection misses
them all). It ends early, answering the run's id as for a timeout, once the gateway is
stopping, so that a draining gateway is not held by long waits.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import asyncpg
import orjson

from services.gateway.runs.facts import links
from services.gateway.runs.stream import RECHECK_S, TERMINAL_STATUSES, Notifier, history_stream
from services.gateway.runs.views import workflow_view


class Mode(StrEnum):
    """How a run request is answered."""

    SYNC = "sync"
    """Wait for the end (or the timeout): 200 with the run's document, or 202."""
    ASYNC = "async"
    """202 at once (``Prefer: respond-async``)."""
    STREAM = "stream"
    """An SSE stream of the run's events (``Accept: text/event-stream``)."""


RESPOND_ASYNC = "respond-async"
"""The RFC 7240 preference (section 4.1) asking for 202 at once."""
EVENT_STREAM = "text/event-stream"
_TOKEN = re.compile(r"\s*([A-Za-z0-9!#$%&'*+.^_`|~-]+)\s*(?:=\s*([^;,]*))?")


@dataclass(frozen=True)
class Preferences:
    """What a ``Prefer`` header asks (RFC 7240, section 2): ``respond_async``, and
    ``wait`` (section 4.3), the seconds the client is willing to wait, or None."""

    respond_async: bool = False
    wait_s: float | None = None


def parse_prefer(values: list[str]) -> Preferences:
    """Read the ``Prefer`` headers; unknown or malformed preferences are ignored, as
    RFC 7240 section 2 asks of a server.

    Args:
        values: every ``Prefer`` header's value (a header may hold several,
            comma-separated, each with ``;`` parameters, which are ignored).
    """
    respond_async, wait_s = False, None
    for value in values:
        for item in value.split(","):
            match = _TOKEN.match(item.split(";", 1)[0])
            if match is None:
                continue
            token, arg = match.group(1).lower(), (match.group(2) or "").strip().strip('"')
            if token == RESPOND_ASYNC:
                respond_async = True
            elif token == "wait" and arg.isascii() and arg.isdigit():
                wait_s = float(arg)
    return Preferences(respond_async, wait_s)


def choose_mode(prefer: Preferences, accept: str) -> Mode:
    """The mode a request asks for: ``respond-async`` wins, then an ``Accept`` that
    names ``text/event-stream`` with a weight above 0 and at least that of JSON, else
    waiting.

    Weights are read as RFC 9110 section 12.5.1 has them: ``q`` from 0 to 1 (1 when
    absent; a malformed one is taken as 1), the most specific range naming a type giving
    its weight (``text/event-stream`` before ``text/*`` before ``*/*``); ``q=0`` means
    "not acceptable". Only a range naming the stream itself chooses it.

    Args:
        prefer: the request's preferences (``parse_prefer``).
        accept: its ``Accept`` header ("" when absent).
    """
    if prefer.respond_async:
        return Mode.ASYNC
    ranges = _media_ranges(accept)
    stream_q = ranges.get(EVENT_STREAM, 0.0)
    json_q = _weight(ranges, "application/json")
    return Mode.STREAM if stream_q > 0 and stream_q >= json_q else Mode.SYNC


def _media_ranges(accept: str) -> dict[str, float]:
    """Each media range of an ``Accept`` header (lowercase, parameters but ``q``
    dropped) and its weight; a range named twice keeps its highest."""
    ranges: dict[str, float] = {}
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        if not media:
            continue
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = min(max(float(value.strip()), 0.0), 1.0)
                except ValueError:
                    q = 1.0
                q = q if math.isfinite(q) else 1.0
        ranges[media.lower()] = max(q, ranges.get(media.lower(), 0.0))
    return ranges


def _weight(ranges: dict[str, float], media: str) -> float:
    """The weight ``ranges`` give ``media`` (its most specific matching range; 0 for
    none)."""
    for candidate in (media, media.split("/", 1)[0] + "/*", "*/*"):
        if candidate in ranges:
            return ranges[candidate]
    return 0.0


def wait_seconds(timeout_s: float | None, prefer: Preferences, cap_s: float) -> float:
    """How long a synchronous run waits, seconds: the query's ``timeout``, else the
    ``Prefer: wait``, else ``cap_s``; never more than ``cap_s``."""
    asked = timeout_s if timeout_s is not None else prefer.wait_s
    return cap_s if asked is None else min(asked, cap_s)


async def wait_for_end(pool: asyncpg.Pool, notifier: Notifier, workflow_id: str,
                       timeout_s: float, stopping: Callable[[], bool] = lambda: False,
                       ) -> dict[str, Any] | None:
    """Wait until the workflow has ended; return its document (``views.workflow_view``:
    ``status``, ``output`` or ``error`` ...), or None when ``timeout_s`` passed first or
    the gateway began stopping (``stopping()``, checked at each re-read).

    Args:
        pool: the projection's pool.
        notifier: wakes the wait when the projector notifies the workflow.
        workflow_id: the run.
        timeout_s: the longest wait, seconds (0: read once).
        stopping: whether the gateway is stopping.

    Raises:
        Problem: 404 when the id is unknown (not even claimed).
        asyncpg.PostgresError, OSError: PostgreSQL fails (the route answers 503).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        status = await pool.fetchval("select status from workflows where workflow_id = $1",
                                     workflow_id)
        if status in TERMINAL_STATUSES:
            return await workflow_view(pool, workflow_id)
        if status is None:
            return await workflow_view(pool, workflow_id)  # raises the 404
        remaining = deadline - loop.time()
        if remaining <= 0 or stopping() or notifier.closing:
            return None
        await notifier.wait(workflow_id, min(remaining, RECHECK_S))


def accepted_doc(workflow_id: str, status: str,
                 warnings: tuple[str, ...] = ()) -> dict[str, Any]:
    """The body of a 202: ``{"id", "status", "links"}``, and ``warnings`` when there are
    (a queue the run needs has no live worker now: ``queues.marks``)."""
    doc: dict[str, Any] = {"id": workflow_id, "status": status, "links": links(workflow_id)}
    if warnings:
        doc["warnings"] = list(warnings)
    return doc


async def run_stream(pool: asyncpg.Pool, notifier: Notifier, workflow_id: str,
                     status: str) -> AsyncIterator[dict[str, Any]]:
    """SSE messages of a run: first ``event: accepted`` with ``accepted_doc`` as data (it
    has no ``id``, so it does not move the client's ``Last-Event-ID``), then the run's
    history from its first event (``stream.history_stream``) until its terminal one.
    A client that loses the stream resumes at ``/v1/workflows/{id}/events`` with the
    last ``id`` it saw.

    Args:
        pool: the projection's pool.
        notifier: wakes the stream.
        workflow_id: the run.
        status: its status when submitted (the accepted message's).
    """
    yield {"event": "accepted", "data": orjson.dumps(accepted_doc(workflow_id, status)).decode()}
    async for message in history_stream(pool, notifier, workflow_id, 0):
        yield message
