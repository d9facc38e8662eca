"""Wires the gateway: settings, Kafka producer, PostgreSQL pool, notifier, routes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import asyncpg
from aiokafka import AIOKafkaProducer
from fastapi import FastAPI

from services.common.db import connect_pool
from services.common.kafka import ensure_topics, make_producer
from services.gateway import problems
from services.gateway.routes import router
from services.gateway.settings import Settings
from services.gateway.stream import Notifier

log = logging.getLogger("headwater.gateway")


@dataclass
class Runtime:
    """What the routes use, created at start-up."""

    settings: Settings
    pool: asyncpg.Pool = field(init=False)
    producer: AIOKafkaProducer = field(init=False)
    notifier: Notifier = field(default_factory=Notifier)
    ready: bool = False

    async def close(self) -> None:
        """Close whatever was opened."""
        await self.notifier.stop()
        if hasattr(self, "producer"):
            await self.producer.stop()
        if hasattr(self, "pool"):
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.pool.close(), 5)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the FastAPI app; Kafka and PostgreSQL connect in the lifespan."""
    settings = settings or Settings.from_env()
    runtime = Runtime(settings)

    async def connect() -> None:
        """Connect in the background so that /ready can answer 503 meanwhile."""
        await ensure_topics(settings, [settings.topics.submissions, settings.topics.control],
                            timeout_s=float("inf"))
        runtime.pool = await connect_pool(settings.pg_dsn, max_size=20, timeout_s=float("inf"))
        runtime.producer = make_producer(settings)
        await runtime.producer.start()
        await runtime.notifier.start(settings.pg_dsn)
        runtime.ready = True
        log.info("gateway ready on %s:%d", settings.host, settings.port)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.hw = runtime
        connecting = asyncio.create_task(connect())
        try:
            yield
        finally:
            runtime.ready = False
            connecting.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await connecting
            await runtime.close()

    app = FastAPI(title="Headwater", version="1", lifespan=lifespan)
    problems.install(app)
    app.include_router(router)
    return app
