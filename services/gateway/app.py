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


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the FastAPI app; Kafka and PostgreSQL connect in the lifespan."""
    settings = settings or Settings.from_env()
    runtime = Runtime(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.hw = runtime
        await ensure_topics(settings, [settings.topics.submissions, settings.topics.control])
        runtime.pool = await connect_pool(settings.pg_dsn, max_size=20)
        runtime.producer = make_producer(settings)
        await runtime.producer.start()
        await runtime.notifier.start(settings.pg_dsn)
        runtime.ready = True
        log.info("gateway ready on %s:%d", settings.host, settings.port)
        try:
            yield
        finally:
            runtime.ready = False
            await runtime.notifier.stop()
            await runtime.producer.stop()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(runtime.pool.close(), 5)

    app = FastAPI(title="Headwater", version="1", lifespan=lifespan)
    problems.install(app)
    app.include_router(router)
    return app
