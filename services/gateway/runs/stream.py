"""Server-Sent Events of a workflow's history, from the projection.

Each event is ``id: <seq>``, ``event: <type>``, ``data: <json>`` (WHATWG HTML, "Server-sent
events"). A reconnecting client sends ``Last-Event-ID`` and gets only later events. The
stream closes after the terminal event. The projector's ``NOTIFY`` wakes waiting
streams; a periodic re-read covers a missed notification. When PostgreSQL stops
answering the stream ends, and the client's reconnection gets 503 until it is back.
When the gateway shuts down, once it has stopped listening (``Notifier.end_streams``),
every stream ends cleanly after what it has read, with a comment saying so and
``retry: 1000`` (ms, the reconnection delay); the client reconnects to another instance
with its ``Last-Event-ID``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

import asyncpg

from headwater.core import events as ev
from headwater.core.status import WorkflowStatus
from services.common.db import LOGS_NOTIFY_CHANNEL, NOTIFY_CHANNEL, connect
from services.gateway.blobs import hrefs
from services.gateway.edge.problems import DATABASE_UNAVAILABLE
from services.gateway.metrics import SSE_SUBSCRIBERS

TERMINAL_STATUSES = frozenset(status for status in WorkflowStatus if status.terminal)
"""The ``workflows.status`` values after which nothing changes."""
TERMINAL_TYPES = frozenset(body.__name__ for body in ev.TERMINAL_BODIES)
"""The ``events.type`` values that end a workflow's stream."""
RECHECK_S = 2.0
"""How often a waiting stream reads again without a notification, seconds."""
RELISTEN_S = 1.0
"""How often the notifier checks its listening connection, seconds."""
PAGE = 500
CLOSING: dict[str, Any] = {"comment": "the gateway is shutting down; reconnect with "
                                      "Last-Event-ID", "retry": 1000}
log = logging.getLogger("headwater.gateway")


CHANNELS = (NOTIFY_CHANNEL, LOGS_NOTIFY_CHANNEL)
"""The projector's channels: its events' and its task logs' (``projector.task_logs``)."""


class Notifier:
    """Listens on ``headwater_events`` and ``headwater_task_logs`` and wakes the streams
    waiting for the named workflows on that channel.

    The listening connection is opened again when it was lost (PostgreSQL restarted),
    checked every ``RELISTEN_S``; meanwhile streams re-read every ``RECHECK_S``, and
    once it is back every waiting stream is woken to read what it missed.
    """

    def __init__(self) -> None:
        self._waiters: dict[tuple[str, str], set[asyncio.Event]] = defaultdict(set)
        self._conn: asyncpg.Connection | None = None
        self._dsn = ""
        self._keeper: asyncio.Task[None] | None = None
        self.closing = False

    async def start(self, dsn: str) -> None:
        """Open the listening connection, and keep it open."""
        self._dsn = dsn
        await self._listen()
        self._keeper = asyncio.create_task(self._keep_listening())

    async def stop(self) -> None:
        """Close the listening connection."""
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper
        if self._conn is not None:
            await self._conn.close()

    async def _listen(self) -> None:
        conn = await connect(self._dsn)
        for channel in CHANNELS:
            await conn.add_listener(channel, self._on_notify)
        self._conn = conn

    async def _keep_listening(self) -> None:
        lost = False
        while True:
            await asyncio.sleep(RELISTEN_S)
            if self._conn is not None and not self._conn.is_closed():
                continue
            if not lost:
                log.warning("lost the connection listening on %s; event streams re-read "
                            "every %.0f s until it is back", NOTIFY_CHANNEL, RECHECK_S)
                lost = True
            try:
                await self._listen()
            except (*DATABASE_UNAVAILABLE, asyncpg.PostgresError):
                continue
            log.info("listening on %s again", NOTIFY_CHANNEL)
            lost = False
            self._wake_all()  # what was notified meanwhile was missed

    def _wake_all(self) -> None:
        for events in self._waiters.values():
            for event in events:
                event.set()

    def end_streams(self) -> None:
        """Make every event stream end at its next step (the gateway is shutting
        down), waking those that wait."""
        self.closing = True
        self._wake_all()

    def _on_notify(self, conn: Any, pid: int, channel: str, payload: str) -> None:
        for workflow_id in payload.split(","):
            for event in self._waiters.get((channel, workflow_id), ()):
                event.set()

    async def wait(self, workflow_id: str, timeout_s: float,
                   channels: tuple[str, ...] = (NOTIFY_CHANNEL,)) -> None:
        """Return when the workflow's projection changes (a notification on one of
        ``channels``: by default its events'), or after ``timeout_s``."""
        event = asyncio.Event()
        keys = [(channel, workflow_id) for channel in channels]
        for key in keys:
            self._waiters[key].add(event)
        try:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow a cancel
            # that arrives with the wake-up, and the stream would outlive its client.
            async with asyncio.timeout(timeout_s):
                await event.wait()
        except TimeoutError:
            pass
        finally:
            for key in keys:
                self._waiters[key].discard(event)
                if not self._waiters[key]:
                    del self._waiters[key]


async def history_stream(pool: asyncpg.Pool, notifier: Notifier, workflow_id: str,
                         after_seq: int) -> AsyncIterator[dict[str, Any]]:
    """Yield SSE messages (``id``, ``event``, ``data``: references with their ``href``,
    ``blobs.hrefs``) with ``seq > after_seq``, in order,
    until and including the terminal event, until PostgreSQL stops answering, or until
    ``notifier`` is closing (then a last ``CLOSING`` message)."""
    last = after_seq
    SSE_SUBSCRIBERS.inc()
    try:
        while True:
            rows = await pool.fetch(
                "select seq, type, data from events where workflow_id = $1 and seq > $2"
                " order by seq limit $3", workflow_id, last, PAGE)
            for row in rows:
                if row["seq"] != last + 1:
                    break  # a gap: the projection has not caught up; read again
                last = row["seq"]
                yield {"id": str(row["seq"]), "event": row["type"],
                       "data": hrefs.dumps(row["data"], workflow_id).decode()}
                if row["type"] in TERMINAL_TYPES:
                    return
            if not rows:
                row = await pool.fetchrow(
                    "select status, seq from workflows where workflow_id = $1", workflow_id)
                if row is None or (row["status"] in TERMINAL_STATUSES and row["seq"] <= last):
                    return  # resumed at or after the terminal event: nothing more will come
            if notifier.closing:
                yield CLOSING
                return
            if len(rows) < PAGE:
                await notifier.wait(workflow_id, RECHECK_S)
    except DATABASE_UNAVAILABLE as e:
        log.warning("ending the event stream of %s at seq %d: PostgreSQL unavailable: %r",
                    workflow_id, last, e)
    finally:
        SSE_SUBSCRIBERS.dec()
