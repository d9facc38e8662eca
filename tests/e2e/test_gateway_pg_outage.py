"""PostgreSQL lost under a running gateway: 503 problems with Retry-After, /ready 503.

A second gateway reaches the stack's PostgreSQL through a TCP proxy in this test; cutting
the proxy drops every connection and refuses new ones, as a database restart does.
Before the fix the routes answered a bare 500 and /ready stayed 200.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
from stackkit import Stack

from ops.localstack import Service
from ops.sandbox import free_port
from tests.polling import scaled, wait_until_async

SPEC = {"name": "pg-down", "nodes": [{"id": "a", "task": "e2e.flaky",
                                      "input": {"succeed_on": 1}}]}


class TcpProxy:
    """Forwards ``127.0.0.1:port`` to a target; ``cut`` drops it all, ``restore`` undoes.

    Args:
        host: the target's host.
        port: the target's port.
    """

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def restore(self) -> None:
        """Listen (again)."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def cut(self) -> None:
        """Stop listening and reset every forwarded connection."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks)
        self._tasks.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        up_writer: asyncio.StreamWriter | None = None
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        except (OSError, asyncio.CancelledError):
            pass  # cut() cancels: end quietly, the resets below are the point
        finally:
            writer.transport.abort()
            if up_writer is not None:
                up_writer.transport.abort()
            self._tasks.discard(task)

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.transport.abort()


async def wait_for_status(client: httpx.AsyncClient, path: str, status: int,
                          timeout_s: float = 60) -> httpx.Response:
    """Poll ``path`` until it answers ``status`` (``timeout_s`` scaled, see
    ``tests/polling.py``)."""
    return await wait_until_async(lambda: client.get(path), timeout_s,
                                  f"{status} on {path}",
                                  until=lambda r: r.status_code == status,
                                  ignore=(httpx.TransportError,), interval_s=0.2)


def assert_503(response: httpx.Response, title: str) -> None:
    """A 503 problem with ``Retry-After``."""
    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["retry-after"] == "1"
    assert response.json()["title"] == title


async def test_database_lost_and_back(stack: Stack) -> None:
    pg = urlsplit(stack.dsn)
    proxy = TcpProxy(pg.hostname or "127.0.0.1", pg.port or 5432)
    await proxy.restore()
    port = free_port()
    service = Service("gateway-pg-proxy", (sys.executable, "-m", "services.gateway"))
    proxied = pg._replace(netloc=pg.netloc.replace(f"{pg.hostname}:{pg.port}",
                                                   f"127.0.0.1:{proxy.port}"))
    stack.start(service, {"HEADWATER_GATEWAY_PORT": str(port),
                          "HEADWATER_PG_DSN": proxied.geturl()})
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            await wait_for_status(client, "/ready", 200)
            assert (await client.get("/v1/workflows")).status_code == 200

            await proxy.cut()
            assert_503(await client.get("/v1/workflows/nope"), "Database unavailable")
            assert_503(await client.get("/v1/workflows"), "Database unavailable")
            assert_503(await client.get("/v1/workflows/nope/events"), "Database unavailable")
            assert_503(await client.post("/v1/workflows", json={"workflow": SPEC}),
                       "Database unavailable")
            assert_503(await client.post("/v1/workflows/nope/cancel", json={}),
                       "Database unavailable")
            started = time.monotonic()
            assert_503(await client.get("/ready"), "Not ready")
            assert time.monotonic() - started < scaled(5)
            assert (await client.get("/health")).status_code == 200

            await proxy.restore()
            await wait_for_status(client, "/ready", 200, timeout_s=30)
            response = await client.post("/v1/workflows", json={"workflow": SPEC})
            assert response.status_code == 202, response.text
    finally:
        await proxy.cut()  # first: the gateway's shutdown then finds its connections gone
        stack.stop(service)
    log = service.log_file.read_text(errors="replace")
    for crash in ("Exception in ASGI application", "unexpected error"):
        assert crash not in log, log[-3000:]
