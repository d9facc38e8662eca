"""The services the peers need: a Redis of their own for Celery, a fresh PostgreSQL
database on the project's stack for DBOS. Both are gone when their block ends."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg

from load.peers import shapes

log = logging.getLogger("load.peers")
REDIS_PORT = 16379
"""Loopback port of the peers' Redis (not Redis's 6379, which may be someone else's)."""


def ensure_redis() -> str:
    """The path of Debian's ``redis-server``, installed from apt when missing (as root).

    Raises:
        RuntimeError: it is missing and could not be installed.
    """
    found = shutil.which("redis-server")
    if found:
        return found
    log.info("peers: installing redis-server from apt (first run only)")
    subprocess.run(["apt-get", "update", "-qq"], check=False)
    subprocess.run(["apt-get", "install", "-y", "-qq", "redis-server"], check=False,
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    found = shutil.which("redis-server")
    if not found:
        raise RuntimeError("redis-server is missing; install Debian's redis-server package")
    return found


@contextlib.contextmanager
def redis(home: Path, port: int = REDIS_PORT) -> Iterator[str]:
    """A ``redis-server`` on 127.0.0.1:``port`` in ``home/redis`` with Redis's default
    persistence (RDB snapshots, no AOF), stopped by its pid at the end.

    Yields:
        Its URL, database 0.

    Raises:
        TimeoutError: it did not accept connections within 10 s.
    """
    data = home / "redis"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    with (data / "redis.log").open("wb") as out:
        server = subprocess.Popen([ensure_redis(), "--bind", "127.0.0.1", "--port", str(port),
                                   "--dir", str(data), "--daemonize", "no"],
                                  stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_port(port, 10.0, server)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        shapes.stop(server, 10.0)


def _wait_port(port: int, timeout_s: float, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"redis-server exited with {server.returncode} at start")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise TimeoutError(f"redis-server did not listen on {port} within {timeout_s:.0f} s")


@contextlib.contextmanager
def database(admin_dsn: str) -> Iterator[str]:
    """A fresh database on the server of ``admin_dsn``, dropped (with its connections)
    at the end.

    Yields:
        Its DSN.
    """
    name = f"peers_{uuid.uuid4().hex[:10]}"
    asyncio.run(_execute(admin_dsn, f'CREATE DATABASE "{name}"'))
    try:
        yield admin_dsn.rsplit("/", 1)[0] + "/" + name
    finally:
        asyncio.run(_execute(admin_dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _execute(dsn: str, statement: str) -> None:
    conn = await asyncpg.connect(dsn, timeout=10)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()
