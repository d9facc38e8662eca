"""The gateway's notifier listens again once PostgreSQL is back: the projector's
``NOTIFY`` wakes event streams at once again, rather than at their next re-read.

The notifier reaches the stack's PostgreSQL through a TCP proxy; cutting it drops the
listening connection, as a database restart does. Before the fix the connection was
never opened again: until the gateway was restarted by hand, no notification ever
reached a stream (each waited its whole re-read interval).
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

import asyncpg
from stackkit import Stack
from test_gateway_pg_outage import TcpProxy

from services.common.db import NOTIFY_CHANNEL
from services.gateway.runs.stream import Notifier
from tests.polling import wait_until_async

WAIT_S = 5.0
"""How long one waiter waits for its notification, seconds."""


async def woken_after(notifier: Notifier, dsn: str, workflow_id: str) -> float:
    """Seconds a waiter on ``workflow_id`` waited once a notification naming it was sent
    (``WAIT_S`` or more: it was not woken)."""
    waiting = asyncio.create_task(notifier.wait(workflow_id, WAIT_S))
    await asyncio.sleep(0.1)  # the waiter is registered
    conn = await asyncpg.connect(dsn)
    try:
        sent = time.monotonic()
        await conn.execute("select pg_notify($1, $2)", NOTIFY_CHANNEL, workflow_id)
    finally:
        await conn.close()
    await waiting
    return time.monotonic() - sent


async def test_notifications_wake_streams_again_after_the_database_is_back(
        stack: Stack) -> None:
    pg = urlsplit(stack.dsn)
    proxy = TcpProxy(pg.hostname or "127.0.0.1", pg.port or 5432)
    await proxy.restore()
    proxied = pg._replace(netloc=pg.netloc.replace(f"{pg.hostname}:{pg.port}",
                                                   f"127.0.0.1:{proxy.port}")).geturl()
    notifier = Notifier()
    await notifier.start(proxied)
    try:
        assert await woken_after(notifier, stack.dsn, "before") < WAIT_S / 2
        await proxy.cut()
        await proxy.restore()
        waited = await wait_until_async(
            lambda: woken_after(notifier, stack.dsn, "after"), 30,
            "a notification waking its stream after the database was back",
            until=lambda s: s < WAIT_S / 2)
        assert waited < WAIT_S / 2
    finally:
        await notifier.stop()
        await proxy.cut()
